// Data-parallel training, step 1: splitting a global minibatch over ranks
// by work. Each sample's work is what its forward/backward costs, measured
// in what grows with it (vertices of a tree, tokens of a sentence); the
// split is longest-processing-time first (Graham's LPT, within 4/3 of the
// best makespan), and depends only on the work list and the world size, so
// every rank computes the same split without talking to the others.
//
// @code
// std::vector<int64_t> work;                      // one entry per sample of the global batch
// for (const InputGraph& g : batch) work.push_back(g.size());
// const dist::Shards shards = dist::shard_by_work(work, world_size);
// const std::vector<int>& mine = shards.samples[rank];   // ascending sample indices
// @endcode
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sylva::dist {

struct Shards {
  /// samples[r]: the indices of rank r's samples, ascending (the global
  /// batch's order, so a rank's loss sums its samples in the order a single
  /// process would). A rank may get none (fewer samples than ranks).
  std::vector<std::vector<int>> samples;
  /// work[r]: the sum of rank r's samples' work.
  std::vector<int64_t> work;
  /// Largest rank's work over the mean (1 is perfect; 0 samples: 1).
  double imbalance() const;
};

/// Splits samples with work `work[i]` (≥ 0) over `world` (≥ 1) ranks:
/// samples by decreasing work (equal work: lower index first), each to the
/// rank with the least work so far (equal: the lowest rank). sylva::Error
/// for world < 1 or a negative work, naming the sample.
Shards shard_by_work(std::span<const int64_t> work, int world);

}  // namespace sylva::dist
