// CoSA (Huang et al., ISCA 2021): one mixed-integer program, solved with
// CBC, that assigns every prime factor of every loop bound to a memory
// level and to a spatial or temporal loop there -- tiling and spatial
// mapping at once, no search. Variables X[f][level][spatial|temporal]
// (binary), each factor placed exactly once; constraints in log form:
// spatial factors of a level within its fan-out, each kept tensor's tile
// within its share of the level's entries (divided by its multiple
// buffering); objective: a weighted sum of utilisation (spatial factors),
// compute (temporal factors) and DRAM traffic (tile at the keeper just
// inside DRAM x refetches x distinct copies), all linear in X.
//
// Deviation from the paper (see docs/architecture.md, "CoSA"): the MIP's
// traffic term assumes every loop above a tensor's keeper refetches it (no
// reuse through the loop order); the loop order of the levels above the
// keepers is then chosen by evaluating every order of each level's loops
// with the analytical model (cosa_model.h), level by level.
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

/// Objective weights (all >= 0). Defaults: each term counts equally, as in
/// CoSA's released code.
struct ObjectiveWeights {
  double utilization = 1.0;  // rewards spatial factors (log of PEs used)
  double compute = 1.0;      // penalises temporal factors (log of cycles per PE)
  double traffic = 1.0;      // penalises log DRAM traffic, summed over tensors
};

struct Result {
  Mapping mapping;
  Evaluation evaluation;
  double objective = 0;     // the MIP's objective at its solution
  double solve_seconds = 0;  // CBC's time (building the model included)
  int variables = 0, constraints = 0;
};

/// The prime factors of n, ascending (n >= 1; 1 has none).
std::vector<int64_t> prime_factors(int64_t n);

/// Solves CoSA's MIP for `p` on `a` (keep/bypass from `ms`) and decodes the
/// mapping. sylva::Error if the MIP is infeasible (e.g. a buffer too small
/// for any tiling) or CBC fails.
Result schedule(const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w = {});

/// The MIP's objective for a given mapping (its factors' placement), and
/// whether the mapping meets the MIP's own constraints: how tests check the
/// solver's optimality by enumeration.
double mip_objective(const Mapping& m, const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w,
                     bool* feasible = nullptr);

}  // namespace sylva::cosa
