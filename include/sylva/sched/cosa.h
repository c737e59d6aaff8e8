// CoSA (Huang et al., ISCA 2021): one mixed-integer program, solved with
// CBC, that assigns every prime factor of every loop bound to a memory
// level and to a spatial or temporal loop there, and picks which tensor
// each level above the keepers reuses through its loop order -- tiling,
// loop order and spatial mapping at once, no search.
//
// Variables: x[f][place] (integer: copies of a group of identical prime
// factors placed there; the paper's binaries without their symmetric
// solutions); z[level][tensor] (binary: the level's loops that do not index
// the tensor are its innermost, at most one tensor per level -- no
// dimension is irrelevant to two tensors, so no order serves two);
// moving[tensor][level] (binary: a loop indexing the tensor iterates
// between its keeper and that level); reused[tensor][level][f]
// (continuous, <= x, <= copies x z, <= copies x (1 - moving below)): the
// copies that do not refetch the tensor; y (the log of the cycle bound).
// Constraints in log form: every copy placed; spatial factors within the
// fan-out; each kept tile within its share of the level; y >= log compute
// cycles and y >= log DRAM traffic of each tensor - log bandwidth.
// Objective: weighted - log spatial + log temporal + sum over tensors of log
// DRAM traffic (tile at the keeper just inside DRAM x refetches not reused
// x distinct copies) + y. Every product of binaries is linearised; it stays
// a pure MILP. The decoded orders are refined by the analytical model
// (cosa_model.h), level by level, keeping the MIP's order unless another is
// better.
//
// @code
// cosa::Result r = cosa::schedule(problem, arch, mapspace);
// write_file_atomically("map.yaml", cosa::mapping_yaml(r.mapping));
// r.evaluation.cycles;   // the analytical model's verdict
// @endcode
#pragma once

#include "sylva/sched/cosa_model.h"
#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// Objective weights (all >= 0). Defaults: each term counts equally (the
/// first three as in CoSA's released code; latency is ours).
struct ObjectiveWeights {
  double utilization = 1.0;  // rewards spatial factors (log of PEs used)
  double compute = 1.0;      // penalises temporal factors (log of cycles per PE)
  double traffic = 1.0;      // penalises log DRAM traffic, summed over tensors
  double latency = 1.0;      // penalises log max(compute cycles, each tensor's DRAM traffic / bandwidth)
  /// Penalises the log of the number of innermost blocks a CPU kernel runs
  /// one after another: temporal factors above level 1 (L1 in cpu_arch),
  /// each a loop around the micro-kernel's block that makes it run again,
  /// with its accumulators reloaded and its reduction cut short (what
  /// estimate_kernel prices and the analytical model does not) -- except
  /// R, S and C at level 2 where the mapspace holds the outputs there
  /// (cpu_mapspace), which run_conv folds into the block. 0 leaves CoSA's
  /// objective as published; cpu_objective() turns it on.
  double blocks = 0.0;
};

/// The weights for cpu_arch's machines: the defaults plus blocks = 1.
ObjectiveWeights cpu_objective();

/// How far CBC goes. The defaults prove the optimum; with the blocks term
/// that can take seconds on a layer (ResNet-50's 7x7 stem: 9 s), so the CPU
/// stops within `gap` of the best bound (in the objective's log units) or
/// after `seconds` of CPU time, keeping the best mapping found.
struct SolveLimits {
  double gap = 0;      // absolute allowable gap (0: proven optimal)
  double seconds = 0;  // 0: no limit
};
/// cpu_objective's limits: gap 0.3 (a factor of e^0.3 = 1.35 on the
/// objective's product), 0.9 s (the goal is a mapping within 1 s
/// per layer; on the 2-core EPYC most ResNet-50 layers stop there rather
/// than at the gap, docs/notes/cosa-kernels.md).
SolveLimits cpu_limits();

struct Result {
  Mapping mapping;
  Evaluation evaluation;
  double objective = 0;     // the MIP's objective at its solution
  double solve_seconds = 0;  // CBC's time (building the model included)
  int variables = 0, constraints = 0;
  bool optimal = true;       // proven optimal within the limits' gap (false: stopped at their time limit)
};

/// The prime factors of n, ascending (n >= 1; 1 has none).
std::vector<int64_t> prime_factors(int64_t n);

/// The bounds with a prime factor above `limit`, as "P=13 Q=13" (empty if
/// none): such a factor can only sit whole at one place, which may leave
/// fan-out or buffer space unused.
std::string large_primes(const Problem& p, int64_t limit);

/// `p` with every bound rounded up to the nearest number whose prime factors
/// are all <= limit (limit >= 2): CoSA's optional padding. The padded layer
/// computes more MACs (compare macs()); its mapping is a mapping of the
/// padded layer, and its cycles include that extra work.
Problem pad_problem(const Problem& p, int64_t limit);

/// Solves CoSA's MIP for `p` on `a` (keep/bypass from `ms`) and decodes the
/// mapping. sylva::Error if the MIP is infeasible (e.g. a buffer too small
/// for any tiling) or CBC fails.
Result schedule(const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w = {},
                const SolveLimits& limits = {});

/// The MIP's objective for a given mapping's factor placement (with the
/// best reuse choice z for that placement, as the MIP would pick it; the
/// mapping's own loop orders do not matter), and whether the placement meets
/// the MIP's own constraints: how tests check the solver's optimality by
/// enumeration.
double mip_objective(const Mapping& m, const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w,
                     bool* feasible = nullptr);

}  // namespace sylva::cosa
