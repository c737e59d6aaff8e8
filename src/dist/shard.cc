#include "sylva/dist/shard.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <utility>

#include "sylva/core/error.h"

namespace sylva::dist {

double Shards::imbalance() const {
  if (work.empty()) return 1.0;
  const int64_t total = std::accumulate(work.begin(), work.end(), int64_t{0});
  if (total == 0) return 1.0;
  const int64_t largest = *std::max_element(work.begin(), work.end());
  return static_cast<double>(largest) * static_cast<double>(work.size()) / static_cast<double>(total);
}

Shards shard_by_work(std::span<const int64_t> work, int world) {
  SYLVA_CHECK(world >= 1, "[dist] shard_by_work: world size ", world, " (must be at least 1)");
  for (size_t i = 0; i < work.size(); ++i)
    SYLVA_CHECK(work[i] >= 0, "[dist] shard_by_work: sample ", i, " has negative work ", work[i]);
  std::vector<int> order(work.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return work[static_cast<size_t>(a)] > work[static_cast<size_t>(b)]; });
  // The least-loaded rank first; equal loads: the lowest rank.
  using Load = std::pair<int64_t, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> ranks;
  for (int r = 0; r < world; ++r) ranks.emplace(0, r);
  Shards s;
  s.samples.resize(static_cast<size_t>(world));
  s.work.assign(static_cast<size_t>(world), 0);
  for (int i : order) {
    auto [load, r] = ranks.top();
    ranks.pop();
    s.samples[static_cast<size_t>(r)].push_back(i);
    load += work[static_cast<size_t>(i)];
    s.work[static_cast<size_t>(r)] = load;
    ranks.emplace(load, r);
  }
  for (auto& mine : s.samples) std::sort(mine.begin(), mine.end());
  return s;
}

}  // namespace sylva::dist
