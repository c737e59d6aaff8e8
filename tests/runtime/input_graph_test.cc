#include "sylva/runtime/input_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

std::vector<int32_t> to_vec(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

const std::string kSrc = "train.txt:17";

TEST(InputGraph, FromChildrenBasic) {
  InputGraph g = InputGraph::from_children({{}, {}, {0, 1}}, "tiny");
  EXPECT_EQ(g.num_vertices(), 3);
  EXPECT_EQ(g.num_edges(), 2);
  EXPECT_EQ(to_vec(g.children(2)), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(g.children(0).empty());
  EXPECT_EQ(g.max_arity(), 2);
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{2}));
  EXPECT_EQ(g.source(), "tiny");
  g.set_source("other");
  EXPECT_EQ(g.source(), "other");
}

TEST(InputGraph, EmptyGraph) {
  InputGraph d;
  EXPECT_EQ(d.num_vertices(), 0);
  EXPECT_EQ(d.max_arity(), 0);
  EXPECT_TRUE(d.roots().empty());
  d.validate();
  InputGraph g = InputGraph::from_children({});
  EXPECT_EQ(g.num_vertices(), 0);
  EXPECT_EQ(g.num_edges(), 0);
}

TEST(InputGraph, AbsentSlotAllowed) {
  InputGraph g = InputGraph::from_children({{}, {-1, 0}, {-1, -1, -1}});
  EXPECT_EQ(to_vec(g.children(1)), (std::vector<int32_t>{-1, 0}));
  EXPECT_EQ(g.max_arity(), 3);
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{1, 2}));
}

TEST(InputGraph, SharedChildDagAllowed) {
  InputGraph g = InputGraph::from_children({{}, {0}, {0}, {1, 2}});
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{3}));
  EXPECT_EQ(g.num_edges(), 4);
}

TEST(InputGraph, ChildOutOfRange) {
  std::vector<std::vector<int32_t>> c(7);
  c[4] = {0, 9};
  const std::string msg = error_of([&] { InputGraph::from_children(c, kSrc); });
  EXPECT_CONTAINS(msg, "[input_graph] sample train.txt:17: vertex 4 child slot 1 = 9 out of range [0, 7)");
}

TEST(InputGraph, NegativeChildOtherThanAbsent) {
  const std::string msg = error_of([&] { InputGraph::from_children({{}, {-2}}, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 1 child slot 0 = -2 out of range");
}

TEST(InputGraph, SelfLoop) {
  const std::string msg = error_of([&] { InputGraph::from_children({{}, {0, 1}}, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 1 child slot 1");
  EXPECT_CONTAINS(msg, "self loop");
}

TEST(InputGraph, TwoCycle) {
  const std::string msg = error_of([&] { InputGraph::from_children({{1}, {0}}, kSrc); });
  EXPECT_CONTAINS(msg, "[input_graph] sample train.txt:17: cycle");
  EXPECT_CONTAINS(msg, "0 -> 1 -> 0");
}

TEST(InputGraph, CycleBelowAValidRoot) {
  // 0 -> 1 -> 2 -> 1: vertex 0 is fine, the cycle is 1 <-> 2.
  const std::string msg = error_of([&] { InputGraph::from_children({{1}, {2}, {1}}, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "cycle");
  EXPECT_CONTAINS(msg, "1 -> 2 -> 1");
}

TEST(InputGraph, LongCycleNoRecursion) {
  constexpr int32_t n = 100000;
  std::vector<std::vector<int32_t>> c(n);
  for (int32_t i = 0; i < n; ++i) c[i] = {(i + 1) % n};
  const std::string msg = error_of([&] { InputGraph::from_children(c, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "cycle");
  EXPECT_CONTAINS(msg, "more)");  // elided, not 100k numbers
  EXPECT_LT(msg.size(), 1000u);
}

TEST(InputGraph, LongChainValid) {
  constexpr int32_t n = 100000;
  std::vector<std::vector<int32_t>> c(n);
  for (int32_t i = 1; i < n; ++i) c[i] = {i - 1};
  InputGraph g = InputGraph::from_children(c);
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{n - 1}));
  EXPECT_EQ(g.max_arity(), 1);
}

TEST(InputGraph, ValidateMaxChildren) {
  InputGraph g = InputGraph::from_children({{}, {}, {}, {0, 1, 2}}, kSrc);
  g.validate(3);
  g.validate(-1);
  const std::string msg = error_of([&] { g.validate(2); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 3 has 3 child slots");
  EXPECT_CONTAINS(msg, "F reads at most 2 children");
}

TEST(InputGraph, FromParentsOrdersChildrenById) {
  const std::vector<int32_t> parents{3, 3, -1, 2, 3};
  InputGraph g = InputGraph::from_parents(parents, kSrc);
  EXPECT_EQ(to_vec(g.children(3)), (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(to_vec(g.children(2)), (std::vector<int32_t>{3}));
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{2}));
  EXPECT_EQ(g.source(), kSrc);
}

TEST(InputGraph, FromParentsForest) {
  const std::vector<int32_t> parents{-1, -1, 0};
  InputGraph g = InputGraph::from_parents(parents);
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{0, 1}));
}

TEST(InputGraph, FromParentsOutOfRange) {
  const std::vector<int32_t> too_big{-1, 5};
  std::string msg = error_of([&] { InputGraph::from_parents(too_big, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 1 has parent 5 out of range [0, 2)");
  const std::vector<int32_t> too_small{-1, -2};
  msg = error_of([&] { InputGraph::from_parents(too_small, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 1 has parent -2");
}

TEST(InputGraph, FromParentsSelfParent) {
  const std::vector<int32_t> parents{-1, 1};
  const std::string msg = error_of([&] { InputGraph::from_parents(parents, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 1 is its own parent");
}

TEST(InputGraph, FromParentsCycle) {
  const std::vector<int32_t> parents{-1, 2, 1};
  const std::string msg = error_of([&] { InputGraph::from_parents(parents, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "cycle");
}

TEST(InputGraph, Chain) {
  EXPECT_EQ(InputGraph::chain(0).num_vertices(), 0);
  InputGraph one = InputGraph::chain(1);
  EXPECT_EQ(one.num_vertices(), 1);
  EXPECT_TRUE(one.children(0).empty());
  InputGraph g = InputGraph::chain(4, "s");
  EXPECT_EQ(g.num_vertices(), 4);
  EXPECT_EQ(g.num_edges(), 3);
  EXPECT_TRUE(g.children(0).empty());
  for (int32_t i = 1; i < 4; ++i) EXPECT_EQ(to_vec(g.children(i)), (std::vector<int32_t>{i - 1}));
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{3}));
  EXPECT_EQ(g.max_arity(), 1);
  g.validate(1);
}

TEST(InputGraph, ChainNegativeLength) {
  const std::string msg = error_of([&] { InputGraph::chain(-1, kSrc); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "-1");
}

TEST(InputGraph, ChildrenOfMissingVertex) {
  InputGraph g = InputGraph::chain(3, kSrc);
  const std::string msg = error_of([&] { (void)g.children(3); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "vertex 3 out of range [0, 3)");
  EXPECT_CONTAINS(error_of([&] { (void)g.children(-1); }), "vertex -1 out of range");
}

TEST(InputGraph, Ids) {
  InputGraph g = InputGraph::from_children({{}, {}, {0, 1}}, "tiny");
  EXPECT_FALSE(g.has_ids("labels"));
  g.set_ids("labels", {-1, -1, 4});
  EXPECT_TRUE(g.has_ids("labels"));
  EXPECT_EQ(g.ids("labels"), (std::vector<int32_t>{-1, -1, 4}));
  EXPECT_EQ(g.all_ids().size(), 1u);
}

TEST(InputGraph, SetIdsWrongSize) {
  InputGraph g = InputGraph::chain(3, kSrc);
  const std::string msg = error_of([&] { g.set_ids("words", {1, 2}); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "'words' have 2 entries but the graph has 3 vertices");
  EXPECT_FALSE(g.has_ids("words"));
}

TEST(InputGraph, MissingIdsName) {
  InputGraph g = InputGraph::chain(2, kSrc);
  g.set_ids("labels", {0, 1});
  const std::string msg = error_of([&] { (void)g.ids("words"); });
  EXPECT_CONTAINS(msg, "train.txt:17");
  EXPECT_CONTAINS(msg, "no ids named 'words' (has: labels)");
}

TEST(InputGraph, SourceAlreadyNamedSample) {
  const std::string msg = error_of([&] { InputGraph::from_children({{1}, {0}}, "sample 3"); });
  EXPECT_CONTAINS(msg, "[input_graph] sample 3: cycle");
}

}  // namespace
}  // namespace sylva
