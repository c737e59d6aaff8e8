// Fusion planning: groups of linked row-local ops, convex, in a valid order.
#include "sylva/passes/fusion.h"

#include <gtest/gtest.h>

#include "sylva/backend/backend.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/vertex_function.h"

namespace sylva {
namespace {

using ir::OpKind;

TEST(Fusion, GroupsLinkedOpsButNeverAcrossAPathThatLeavesTheGroup) {
  ParameterSet ps(DType::f64, 1);
  ps.add("W", {4, 8}, Init::uniform(-1, 1));
  VertexFunction f("cell", 4, DType::f64);
  Symbol x = f.pull(4);
  Symbol a = tanh(x) * sigmoid(x);         // one group
  auto [p, q] = split<2>(matmul(a, f.param(ps["W"])));
  Symbol h = p * q + a;                    // reads a directly and through the matmul
  f.scatter(h);
  f.push(h);
  const ir::Graph& g = f.graph();
  std::vector<bool> fusible(g.size());
  for (const ir::Node& n : g.nodes()) fusible[static_cast<size_t>(n.id)] = n.type.rowed && ir::fusible(n.op);
  const std::vector<int32_t> group = passes::fusion_groups(g, fusible);
  const auto group_of = [&](Symbol s) { return group[static_cast<size_t>(s.id())]; };
  const int32_t first = group_of(a), second = group_of(h);
  EXPECT_GE(first, 0);
  EXPECT_GE(second, 0);
  // Merging them would let a path leave (a -> matmul) and come back (-> h).
  EXPECT_NE(first, second);
  EXPECT_EQ(group_of(p), second);
  EXPECT_EQ(group_of(q), second);
  for (const ir::Node& n : g.nodes()) {
    const int32_t gr = group[static_cast<size_t>(n.id)];
    if (n.op == OpKind::Tanh || n.op == OpKind::Sigmoid) {
      EXPECT_EQ(gr, first);
    }
    if (!fusible[static_cast<size_t>(n.id)]) {
      EXPECT_EQ(gr, -1) << ir::op_name(n.op);
    }
  }
  // Every unit runs after the units it reads.
  const std::vector<int32_t> order = passes::unit_order(g, group);
  std::vector<int32_t> position_of_unit_of(g.size(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (const ir::Node& n : g.nodes()) {
      const int32_t unit = group[static_cast<size_t>(n.id)] >= 0 ? -1 - group[static_cast<size_t>(n.id)] : n.id;
      if (unit == order[k]) position_of_unit_of[static_cast<size_t>(n.id)] = static_cast<int32_t>(k);
    }
  for (const ir::Node& n : g.nodes()) {
    ASSERT_GE(position_of_unit_of[static_cast<size_t>(n.id)], 0) << "node " << n.id << " is in no unit";
    for (ir::NodeId in : n.inputs)
      EXPECT_LE(position_of_unit_of[static_cast<size_t>(in)], position_of_unit_of[static_cast<size_t>(n.id)]);
  }
  EXPECT_EQ(order.size(), g.size() - 7 + 2);  // 3 + 4 nodes become two units
}

TEST(Fusion, NothingFusibleMeansNoGroups) {
  VertexFunction f("id", 3, DType::f64);
  Symbol x = f.pull(3);
  f.scatter(tanh(x));
  f.push(x);
  const ir::Graph& g = f.graph();
  const std::vector<int32_t> group = passes::fusion_groups(g, std::vector<bool>(g.size(), false));
  for (int32_t gr : group) EXPECT_EQ(gr, -1);
  EXPECT_EQ(passes::unit_order(g, group).size(), g.size());
  EXPECT_THROW(passes::fusion_groups(g, {true}), Error);
}

}  // namespace
}  // namespace sylva
