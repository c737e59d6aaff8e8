// Work-balanced sharding of a global minibatch (sylva/dist/shard.h).
#include "sylva/dist/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "support/test_util.h"

namespace sylva::dist {
namespace {

// Every sample on exactly one rank, ascending, and the work sums as reported.
void expect_partition(const Shards& s, const std::vector<int64_t>& work, int world) {
  ASSERT_EQ(s.samples.size(), static_cast<size_t>(world));
  ASSERT_EQ(s.work.size(), static_cast<size_t>(world));
  std::vector<int> seen(work.size(), 0);
  for (int r = 0; r < world; ++r) {
    const auto& mine = s.samples[static_cast<size_t>(r)];
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "rank " << r;
    int64_t sum = 0;
    for (int i : mine) {
      ++seen[static_cast<size_t>(i)];
      sum += work[static_cast<size_t>(i)];
    }
    EXPECT_EQ(sum, s.work[static_cast<size_t>(r)]) << "rank " << r;
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "sample " << i;
}

// The smallest makespan over every assignment (small inputs only).
int64_t best_makespan(const std::vector<int64_t>& work, int world) {
  int64_t best = std::numeric_limits<int64_t>::max();
  std::vector<int> rank(work.size(), 0);
  while (true) {
    std::vector<int64_t> load(static_cast<size_t>(world), 0);
    for (size_t i = 0; i < work.size(); ++i) load[static_cast<size_t>(rank[i])] += work[i];
    best = std::min(best, *std::max_element(load.begin(), load.end()));
    size_t k = 0;
    while (k < rank.size() && ++rank[k] == world) rank[k++] = 0;
    if (k == rank.size()) return best;
  }
}

TEST(ShardByWork, LongestFirstToTheLeastLoadedRank) {
  // By hand: 5 -> r0, 4 -> r1, 3 -> r1 (4 < 5), 3 -> r0 (5 < 7), 3 -> r1 (7 < 8).
  const std::vector<int64_t> work{5, 4, 3, 3, 3};
  const Shards s = shard_by_work(work, 2);
  expect_partition(s, work, 2);
  EXPECT_EQ(s.samples[0], (std::vector<int>{0, 3}));
  EXPECT_EQ(s.samples[1], (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(s.work, (std::vector<int64_t>{8, 10}));
  EXPECT_DOUBLE_EQ(s.imbalance(), 10.0 / 9.0);
}

TEST(ShardByWork, IsWithinGrahamsBoundOfTheBestSplit) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int world = 2 + trial % 3;
    const int n = 1 + static_cast<int>(rng() % (world == 4 ? 7 : 9));
    std::vector<int64_t> work(static_cast<size_t>(n));
    for (auto& w : work) w = 1 + static_cast<int64_t>(rng() % 60);
    const Shards s = shard_by_work(work, world);
    expect_partition(s, work, world);
    const int64_t lpt = *std::max_element(s.work.begin(), s.work.end());
    // LPT's makespan <= (4/3 - 1/(3m)) OPT (Graham 1969), in integers: 3m * lpt <= (4m - 1) * opt.
    const int64_t opt = best_makespan(work, world);
    EXPECT_LE(3 * world * lpt, (4 * world - 1) * opt) << "trial " << trial;
  }
}

TEST(ShardByWork, TreebankSizedBatchesAreBalanced) {
  // Sentence trees of 3..99 vertices, SST-like; any list schedule keeps the
  // largest rank within one sample of the mean: max <= mean + max work.
  std::mt19937 rng(11);
  for (int world : {2, 4}) {
    for (int batch : {16, 64, 256}) {
      std::vector<int64_t> work(static_cast<size_t>(batch));
      for (auto& w : work) w = 3 + 2 * static_cast<int64_t>(rng() % 49);
      const Shards s = shard_by_work(work, world);
      expect_partition(s, work, world);
      const double mean = static_cast<double>(std::accumulate(work.begin(), work.end(), int64_t{0})) / world;
      const double largest = static_cast<double>(*std::max_element(s.work.begin(), s.work.end()));
      EXPECT_LE(largest, mean + static_cast<double>(*std::max_element(work.begin(), work.end())));
      if (batch >= 64) {
        EXPECT_LE(s.imbalance(), 1.05) << "world " << world << " batch " << batch;
      }
    }
  }
}

TEST(ShardByWork, FewerSamplesThanRanksLeavesRanksEmpty) {
  const Shards one = shard_by_work(std::vector<int64_t>{7}, 4);
  expect_partition(one, {7}, 4);
  EXPECT_EQ(one.samples[0], (std::vector<int>{0}));
  for (int r = 1; r < 4; ++r) EXPECT_TRUE(one.samples[static_cast<size_t>(r)].empty());
  EXPECT_DOUBLE_EQ(one.imbalance(), 4.0);
  const Shards none = shard_by_work(std::vector<int64_t>{}, 3);
  expect_partition(none, {}, 3);
  EXPECT_DOUBLE_EQ(none.imbalance(), 1.0);
}

TEST(ShardByWork, BadArgumentsAreErrors) {
  EXPECT_CONTAINS(test::error_of([] { shard_by_work(std::vector<int64_t>{1}, 0); }),
                  "[dist] shard_by_work: world size 0 (must be at least 1)");
  EXPECT_CONTAINS(test::error_of([] { shard_by_work(std::vector<int64_t>{1, 2, -3}, 2); }),
                  "sample 2 has negative work -3");
}

}  // namespace
}  // namespace sylva::dist
