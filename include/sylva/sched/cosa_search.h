// Search baselines for CoSA on the analytical model (cosa_model.h): the
// paper's random search (sample mappings until a number of them are valid,
// or until a time budget runs out, and keep the best) and a Timeloop-style
// Hybrid mapper (threads that each draw random tilings and, for every valid
// one, try a handful of pruned loop orders, until `victory` valid mappings
// in a row fail to improve that thread's best). Both rank mappings with
// better(): fewer cycles, then less DRAM traffic.
//
// @code
// cosa::SearchResult r5 = cosa::random_search(problem, arch, mapspace, {.valid = 5, .seed = 1});
// cosa::SearchResult h = cosa::hybrid_search(problem, arch, mapspace, {.threads = 4, .victory = 500});
// if (h.found && cosa::better(h.evaluation, r5.evaluation))
//   write_file_atomically("map.yaml", cosa::mapping_yaml(h.mapping));
// @endcode
#pragma once

#include <cstdint>
#include <random>

#include "sylva/sched/cosa_model.h"
#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

struct SearchResult {
  Mapping mapping;        // the best valid mapping (blank when !found)
  Evaluation evaluation;  // its evaluation
  int64_t sampled = 0;    // mappings drawn (hybrid: tilings drawn plus the extra loop orders tried)
  int64_t valid = 0;      // valid mappings evaluated
  double seconds = 0;     // wall time of the search
  bool found = false;     // false: no valid mapping within the limits
};

/// Whether `a` ranks strictly before `b`: fewer cycles first, then less DRAM
/// traffic (dram_reads summed over tensors + dram_updates). An invalid
/// evaluation is worse than any valid one; two invalid ones are equal.
bool better(const Evaluation& a, const Evaluation& b);

/// A random mapping: every prime factor (prime_factors) of every bound to a
/// uniformly random level, spatially with probability 1/2 where the level has
/// a spatial entry (blank_mapping's has_spatial), temporally otherwise; the
/// loop orders of every level are shuffled. The fan-out is NOT respected: a
/// level's spatial factors may multiply past a.fanout(level), which
/// evaluate() refuses (check_mapping throws); use fits_fanout() first.
Mapping random_mapping(const Problem& p, const Arch& a, const Mapspace& ms, std::mt19937_64& rng);

/// Whether no level's spatial factors multiply past its fan-out.
bool fits_fanout(const Mapping& m, const Arch& a);

struct RandomOptions {
  int valid = 5;       // stop after this many valid mappings (the paper's random-5); >= 1
  double seconds = 0;  // > 0: stop when this time budget runs out instead (`valid` is then ignored)
  uint64_t seed = 1;
  int64_t max_samples = 100000000;  // stop after this many mappings drawn in any case; >= 1
};

/// The paper's random baseline: draws random_mapping()s, drops those past a
/// fan-out or over a buffer's capacity (evaluate().valid), and keeps the best
/// (better()) of the valid ones, until `valid` of them were found (or the time
/// budget runs out) or max_samples were drawn. Deterministic for a seed when
/// no time budget is set. found = false (and no throw) if nothing valid turned
/// up within the limits. sylva::Error naming the option for bad options.
SearchResult random_search(const Problem& p, const Arch& a, const Mapspace& ms, const RandomOptions& o = {});

struct HybridOptions {
  int threads = 0;        // 0: usable_cpu_cores()
  int64_t victory = 500;  // a thread stops after this many valid mappings in a row that do not improve its best
  double seconds = 0;     // > 0: every thread also stops when this time budget runs out
  int max_orders = 16;    // loop-order combinations tried per valid tiling; >= 1
  uint64_t seed = 1;      // thread t seeds its generator with seed + t
  int64_t max_samples = 100000000;  // mappings drawn in all, split evenly across the threads; >= 1
};

/// Timeloop's Hybrid mapper on the analytical model. Each thread repeats:
/// draw a random tiling (random_mapping, redrawn until it fits every
/// fan-out); evaluate it and draw again if a buffer overflows (capacity does
/// not depend on loop order); otherwise explore its loop orders. Only the
/// relative order of the dimensions with a temporal factor > 1 matters at a
/// level (the others go last, in RSPQCKN order), so a tiling has
/// prod over levels of (active dimensions)! distinct order combinations. If
/// there are at most max_orders of them, all are evaluated; otherwise the
/// drawn orders first, then random distinct combinations up to max_orders.
/// Every valid evaluation improves the thread's best (better()) or counts
/// toward `victory`. The threads' bests are merged in thread order (ties go
/// to the lower thread), so threads = 1 with a seed and no time budget is
/// reproducible. found = false (no throw) if nothing valid turned up.
/// sylva::Error naming the option for bad options.
SearchResult hybrid_search(const Problem& p, const Arch& a, const Mapspace& ms, const HybridOptions& o = {});

}  // namespace sylva::cosa
