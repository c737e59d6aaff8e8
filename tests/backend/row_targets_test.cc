// The CUDA backend's atomic-free scatter-add decision (host logic, no GPU):
// distinct target rows add without atomics; any repeat needs them.
#include "../../src/backend/cuda/row_targets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace sylva::cuda {
namespace {

std::vector<uint64_t> seen;

bool distinct(std::vector<int32_t> idx, int64_t rows) { return distinct_rows(idx, rows, seen); }

TEST(RowTargets, DistinctRowsNeedNoAtomics) {
  EXPECT_TRUE(distinct({}, 10));  // the identity
  EXPECT_TRUE(distinct({3, 0, 9, 5}, 10));
  EXPECT_TRUE(distinct({-1, 2, -1, -1, 7}, 10));  // absent children skip, however many
  EXPECT_TRUE(distinct({63, 64, 127, 128}, 200));  // word boundaries
}

TEST(RowTargets, AnyRepeatOrOutOfRangeRowNeedsAtomics) {
  EXPECT_FALSE(distinct({1, 2, 1}, 10));
  EXPECT_FALSE(distinct({64, 0, 64}, 100));
  EXPECT_FALSE(distinct({0, 10}, 10));  // beyond the rows: left to the atomic path
}

// The scratch is left all zero after every answer, so a call never sees
// an earlier call's rows; against a sorted-unique check on random spans.
TEST(RowTargets, MatchesASortCheckAndLeavesTheScratchClean) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 300);
    std::vector<int32_t> idx(rng() % 40);
    for (int32_t& v : idx) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(rows + 5)) - 3;
    std::vector<int32_t> sorted;
    bool in_range = true;
    for (int32_t v : idx) {
      if (v >= 0) sorted.push_back(v);
      in_range = in_range && v < rows;
    }
    std::sort(sorted.begin(), sorted.end());
    const bool want = in_range && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    EXPECT_EQ(distinct(idx, rows), want) << "trial " << trial;
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](uint64_t w) { return w == 0; })) << "trial " << trial;
  }
}

}  // namespace
}  // namespace sylva::cuda
