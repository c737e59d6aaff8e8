// An analytical model of a mapping on a Timeloop-style architecture, for
// CoSA and its baselines: per level and tensor, the tile a keeping level
// holds (its utilized capacity), the capacity check, reads / fills /
// updates per instance (Timeloop's accounting, multicast and spatial
// reduction included), DRAM traffic, compute cycles, cycles under every
// level's stated bandwidth, and energy from per-access costs. Checked against real
// Timeloop (v3.0.3) on shared/data/cosa/timeloop_golden: see
// docs/architecture.md, "CoSA". Not modelled: sliding-window reuse of
// input halos (Timeloop counts only new rows/columns in some loop orders;
// this model refetches whole tiles there, overestimating input traffic),
// address-generation energy.
//
// @code
// cosa::Evaluation e = cosa::evaluate(mapping, problem, arch, mapspace);
// if (e.valid) std::printf("%lld cycles\n", (long long)e.cycles);
// else std::puts(e.why.c_str());
// @endcode
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// One kept tensor at one level, per instance (Timeloop's "scalar
/// accesses per instance").
struct Accesses {
  int64_t reads = 0;    // words read out (to the next keeper in, or the MACs; Outputs: partial sums read back)
  int64_t fills = 0;    // words written in from the next keeper out (Outputs: partial sums fetched again)
  int64_t updates = 0;  // Outputs: partial sums written in from inside
  int64_t instances = 0;  // instances in use
};

struct Evaluation {
  bool valid = true;
  std::string why;  // the first violated constraint when not valid
  /// Per level and tensor: words one instance holds (0 where bypassed).
  std::vector<std::array<int64_t, kTensors>> tile;
  /// DRAM traffic in words: reads per tensor (Outputs: partial sums read
  /// back) and Outputs updates (writes).
  std::array<int64_t, kTensors> dram_reads{};
  int64_t dram_updates = 0;
  int64_t compute_cycles = 0;  // temporal iterations per MAC unit
  int64_t cycles = 0;          // max(compute, per level: reads / read bandwidth, (fills + updates) / write bandwidth)
  double utilization = 0;      // MACs / (cycles x MAC instances)
  /// Per level and tensor (zero where bypassed); DRAM's equal dram_reads / dram_updates.
  std::vector<std::array<Accesses, kTensors>> accesses;
  /// pJ: MACs x MAC energy + per level and tensor, accesses x clusters
  /// touched x vector access energy / block size. NaN when a level's or the
  /// MACs' energy is unknown (see Level::vector_access_energy).
  double energy_pj = 0;
};

/// Which of R S P Q C K N index tensor t (Inputs: C N and P Q R S through
/// the sliding window).
bool relevant(int tensor, int dim);

/// Reorders the temporal loops of each level with a stationary tensor in
/// `ms` so that those not indexing it come first (innermost), each group
/// keeping its order.
void apply_stationary(Mapping& m, const Mapspace& ms);

/// The mapping's tiles, capacity and fan-out checks, DRAM traffic and
/// cycles. The keep/bypass choices come from the mapping's bypass entries.
/// Throws sylva::Error only when the mapping does not fit the problem or
/// architecture at all (check_mapping); a mapping that fits but overflows a
/// buffer is returned with valid = false.
Evaluation evaluate(const Mapping& m, const Problem& p, const Arch& a);

}  // namespace sylva::cosa
