// Seeded graph generators: sizes, post-order ids, arity, determinism per
// seed, uniform shapes, recorded outputs (so moving or refactoring them
// cannot silently change the graphs other tests use), argument errors.
#include "sylva/train/generators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace sylva {
namespace {

using Children = std::vector<std::vector<int32_t>>;

Children children_of(const InputGraph& g) {
  Children out;
  for (int32_t v = 0; v < g.num_vertices(); ++v) out.emplace_back(g.children(v).begin(), g.children(v).end());
  return out;
}

// A tree in post-order: every present child id is smaller than its parent's,
// every vertex but the last has exactly one parent, the last is the root.
void expect_post_order_tree(const InputGraph& g) {
  std::vector<int32_t> parents(static_cast<size_t>(g.num_vertices()), 0);
  for (int32_t v = 0; v < g.num_vertices(); ++v)
    for (int32_t c : g.children(v)) {
      if (c < 0) continue;
      EXPECT_LT(c, v) << g.source() << ": child " << c << " of vertex " << v;
      ++parents[static_cast<size_t>(c)];
    }
  for (int32_t v = 0; v + 1 < g.num_vertices(); ++v) EXPECT_EQ(parents[static_cast<size_t>(v)], 1) << "vertex " << v;
  EXPECT_EQ(parents.back(), 0);
  ASSERT_EQ(g.roots().size(), 1u);
  EXPECT_EQ(g.roots()[0], g.num_vertices() - 1);
}

// Nested parentheses of a binary tree's shape, e.g. "((..).)".
std::string shape(const InputGraph& g, int32_t v) {
  auto c = g.children(v);
  if (c.empty()) return ".";
  std::string s = "(";
  for (int32_t k : c) s += shape(g, k);
  return s + ")";
}

int32_t depth(const InputGraph& g, int32_t v) {
  int32_t d = 0;
  for (int32_t c : g.children(v)) d = std::max(d, 1 + depth(g, c));
  return d;
}

// Outputs recorded from the implementation in tests/support/test_util.cc
// before it moved here: the invariance tests draw their graphs with these.
TEST(Generators, RandomTreeAndDagReproduceTheRecordedGraphs) {
  std::mt19937_64 rng(42);
  InputGraph t = random_tree(rng, 12, 3, true, "t");
  EXPECT_EQ(children_of(t), (Children{{}, {0}, {1}, {}, {}, {2, 3, 4}, {5}, {}, {-1, 7}, {8}, {}, {6, 9, 10}}));
  InputGraph d = random_dag(rng, 8, 3, "d");
  EXPECT_EQ(children_of(d), (Children{{}, {}, {0, 1}, {0, 2, 2}, {1}, {}, {2, 3}, {1}}));
}

TEST(Generators, RandomTreeRespectsItsBounds) {
  std::mt19937_64 rng(3);
  bool saw_hole = false, saw_full = false;
  for (int i = 0; i < 300; ++i) {
    const int32_t max_vertices = 1 + i % 40, max_arity = 1 + i % 4;
    const bool holes = i % 2 == 1;
    InputGraph g = random_tree(rng, max_vertices, max_arity, holes, "t" + std::to_string(i));
    EXPECT_GE(g.num_vertices(), 1);
    EXPECT_LE(g.num_vertices(), max_vertices);
    EXPECT_LE(g.max_arity(), max_arity);
    saw_full = saw_full || g.num_vertices() == max_vertices;
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      for (int32_t c : g.children(v)) {
        EXPECT_TRUE(holes || c >= 0) << "hole without allow_holes in " << g.source();
        saw_hole = saw_hole || c < 0;
      }
    expect_post_order_tree(g);
  }
  EXPECT_TRUE(saw_hole);
  EXPECT_TRUE(saw_full);
}

TEST(Generators, RandomBinaryTreeIsFullAndPostOrdered) {
  std::mt19937_64 rng(5);
  for (int32_t leaves : {1, 2, 3, 7, 64, 255}) {
    InputGraph g = random_binary_tree(rng, leaves, "b" + std::to_string(leaves));
    EXPECT_EQ(g.num_vertices(), 2 * leaves - 1);
    EXPECT_EQ(g.num_edges(), 2 * leaves - 2);
    EXPECT_EQ(g.source(), "b" + std::to_string(leaves));
    int32_t leaf_count = 0;
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const size_t k = g.children(v).size();
      EXPECT_TRUE(k == 0 || k == 2) << "vertex " << v << " has " << k << " children";
      leaf_count += k == 0;
    }
    EXPECT_EQ(leaf_count, leaves);
    expect_post_order_tree(g);
  }
}

TEST(Generators, RandomBinaryTreeShapesAreUniform) {
  // 4 leaves: Catalan(3) = 5 shapes, each with probability 1/5. 5000 draws
  // give 1000 ± 28 (one sd) per shape; the bounds are beyond 4 sd.
  std::mt19937_64 rng(11);
  std::map<std::string, int> counts;
  for (int i = 0; i < 5000; ++i) {
    InputGraph g = random_binary_tree(rng, 4, "u");
    ++counts[shape(g, g.num_vertices() - 1)];
  }
  EXPECT_EQ(counts.size(), 5u);
  for (const auto& [s, n] : counts) {
    EXPECT_GT(n, 880) << s;
    EXPECT_LT(n, 1120) << s;
  }
}

TEST(Generators, RandomBinaryTreeScalesToLargeTrees) {
  std::mt19937_64 rng(2);
  InputGraph g = random_binary_tree(rng, 100000, "deep");
  EXPECT_EQ(g.num_vertices(), 199999);
  EXPECT_EQ(g.roots(), std::vector<int32_t>{199998});
}

TEST(Generators, SameSeedSameGraphsDifferentSeedDifferentGraphs) {
  auto draw = [](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Children> out;
    out.push_back(children_of(random_binary_tree(rng, 32, "b")));
    out.push_back(children_of(random_tree(rng, 40, 3, true, "t")));
    out.push_back(children_of(random_dag(rng, 30, 3, "d")));
    std::vector<int32_t> lengths = random_lengths(rng, 10, 1, 50);
    out.push_back({lengths});
    return out;
  };
  const std::vector<Children> a = draw(1), b = draw(1), c = draw(2);
  EXPECT_EQ(a, b);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NE(a[k], c[k]) << "generator " << k << " ignored the seed";
}

TEST(Generators, CompleteBinaryTreeHasTheExactPostOrderLayout) {
  EXPECT_EQ(children_of(complete_binary_tree(1, "c")), (Children{{}}));
  EXPECT_EQ(children_of(complete_binary_tree(4, "c")), (Children{{}, {}, {0, 1}, {}, {}, {3, 4}, {2, 5}}));
  for (int32_t leaves : {2, 32, 1024}) {
    InputGraph g = complete_binary_tree(leaves, "c");
    EXPECT_EQ(g.num_vertices(), 2 * leaves - 1);
    EXPECT_EQ(g.num_edges(), 2 * leaves - 2);
    EXPECT_EQ(g.max_arity(), 2);
    expect_post_order_tree(g);
    int32_t log2 = 0;
    while ((1 << log2) < leaves) ++log2;
    EXPECT_EQ(depth(g, g.num_vertices() - 1), log2);
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      if (!g.children(v).empty()) {
        auto c = g.children(v);  // both subtrees of a complete tree have the same depth
        EXPECT_EQ(depth(g, c[0]), depth(g, c[1])) << "vertex " << v;
      }
  }
}

TEST(Generators, ChainsHaveOneGraphPerLength) {
  const std::vector<int32_t> lengths{3, 1, 5};
  std::vector<InputGraph> gs = chains(lengths, "sentence");
  ASSERT_EQ(gs.size(), 3u);
  for (size_t i = 0; i < gs.size(); ++i) {
    EXPECT_EQ(gs[i].num_vertices(), lengths[i]);
    EXPECT_EQ(gs[i].num_edges(), lengths[i] - 1);
    EXPECT_EQ(gs[i].source(), "sentence " + std::to_string(i));
    for (int32_t v = 1; v < gs[i].num_vertices(); ++v)
      EXPECT_EQ(std::vector<int32_t>(gs[i].children(v).begin(), gs[i].children(v).end()), std::vector<int32_t>{v - 1});
  }
  EXPECT_TRUE(chains({}, "none").empty());
}

TEST(Generators, RandomLengthsCoverTheClosedRange) {
  std::mt19937_64 rng(9);
  std::vector<int32_t> l = random_lengths(rng, 2000, 3, 7);
  ASSERT_EQ(l.size(), 2000u);
  std::map<int32_t, int> seen;
  for (int32_t x : l) ++seen[x];
  EXPECT_EQ(seen.begin()->first, 3);
  EXPECT_EQ(seen.rbegin()->first, 7);
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(random_lengths(rng, 4, 6, 6), (std::vector<int32_t>{6, 6, 6, 6}));
  EXPECT_TRUE(random_lengths(rng, 0, 1, 2).empty());
}

TEST(Generators, RandomDagHasBoundedFaninFromEarlierVertices) {
  std::mt19937_64 rng(4);
  InputGraph g = random_dag(rng, 200, 3, "dag");
  EXPECT_EQ(g.num_vertices(), 200);
  EXPECT_LE(g.max_arity(), 3);
  EXPECT_TRUE(g.children(0).empty());
  int64_t edges = 0;
  for (int32_t v = 0; v < g.num_vertices(); ++v)
    for (int32_t c : g.children(v)) {
      EXPECT_GE(c, 0);
      EXPECT_LT(c, v);
      ++edges;
    }
  EXPECT_GT(edges, 200);  // mean fan-in 1.5: about 300 edges
  EXPECT_EQ(random_dag(rng, 5, 0, "empty").num_edges(), 0);
}

TEST(Generators, BadArgumentsThrowNamingTheFunctionAndValue) {
  std::mt19937_64 rng(1);
  std::string e = test::error_of([&] { complete_binary_tree(6, "c"); });
  EXPECT_CONTAINS(e, "[generators] complete_binary_tree");
  EXPECT_CONTAINS(e, "power of two");
  EXPECT_CONTAINS(e, "got 6");
  EXPECT_CONTAINS(test::error_of([&] { complete_binary_tree(0, "c"); }), "got 0");
  EXPECT_CONTAINS(test::error_of([&] { complete_binary_tree(-8, "c"); }), "got -8");
  EXPECT_CONTAINS(test::error_of([&] { random_binary_tree(rng, 0, "b"); }), "random_binary_tree: leaves must be");
  EXPECT_CONTAINS(test::error_of([&] { random_tree(rng, 0, 2, false, "t"); }),
                  "random_tree: max_vertices must be >= 1, got 0");
  EXPECT_CONTAINS(test::error_of([&] { random_tree(rng, 5, 0, false, "t"); }),
                  "random_tree: max_arity must be >= 1, got 0");
  EXPECT_CONTAINS(test::error_of([&] { random_dag(rng, 0, 2, "d"); }), "random_dag: n must be >= 1, got 0");
  EXPECT_CONTAINS(test::error_of([&] { random_dag(rng, 4, -1, "d"); }), "random_dag: max_fanin must be >= 0, got -1");
  const std::vector<int32_t> lengths{4, 0, 2};
  EXPECT_CONTAINS(test::error_of([&] { chains(lengths, "s"); }), "chains: lengths[1] must be >= 1, got 0");
  EXPECT_CONTAINS(test::error_of([&] { random_lengths(rng, -1, 1, 2); }), "random_lengths: count must be >= 0, got -1");
  EXPECT_CONTAINS(test::error_of([&] { random_lengths(rng, 3, 5, 4); }), "got min_len 5, max_len 4");
  EXPECT_CONTAINS(test::error_of([&] { random_lengths(rng, 3, 0, 4); }), "got min_len 0");
}

}  // namespace
}  // namespace sylva
