// IOS on Sylva's own graphs: gate matmuls written one per gate are merged
// by the DP (not by a rule that looks for them), the planned F and ∂F give
// the results of the unplanned ones, and parameter gradients of merged
// matmuls stay one product each (lazy batching keeps them out of the loop).
#include "sylva/sched/ios_ir.h"

#include <gtest/gtest.h>

#include <random>

#include "support/test_util.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/generators.h"

namespace sylva {
namespace {

constexpr int kVocab = 13, kClasses = 3, kD = 5, kH = 4;
const char* kGates[] = {"i", "f", "o", "u"};

// A binary Tree-LSTM-like cell written gate by gate: x·W_g + [hl; hr]·U_g + b_g.
struct PerGateModel {
  ParameterSet ps{DType::f64, 7};
  Program p{DType::f64};
  VertexFunction f{"per_gate", 2 * kH, DType::f64};
  Symbol loss, hs;

  PerGateModel() {
    ps.add("E", {kVocab, kD}, Init::uniform(-1, 1));
    ps.add("Wo", {kH, kClasses}, Init::uniform(-1, 1));
    for (const char* g : kGates) {
      ps.add(std::string("W_") + g, {kD, kH}, Init::uniform(-0.5, 0.5));
      ps.add(std::string("U_") + g, {2 * kH, kH}, Init::uniform(-0.5, 0.5));
      ps.add(std::string("b_") + g, {kH}, Init::uniform(-0.5, 0.5));
    }
    Symbol x = f.pull(kD);
    auto [hl, cl] = split<2>(f.gather(0));
    auto [hr, cr] = split<2>(f.gather(1));
    Symbol hh = concat({hl, hr});
    std::vector<Symbol> gate;
    for (const char* g : kGates)
      gate.push_back(matmul(x, f.param(ps[std::string("W_") + g])) + matmul(hh, f.param(ps[std::string("U_") + g])) +
                     f.param(ps[std::string("b_") + g]));
    Symbol c = sigmoid(gate[0]) * tanh(gate[3]) + sigmoid(gate[1]) * (cl + cr);
    Symbol h = sigmoid(gate[2]) * tanh(c);
    f.scatter(concat({h, c}));
    f.push(h);
    hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels"));
  }
};

int count(const ir::Graph& g, ir::OpKind op) { return static_cast<int>(g.find(op).size()); }

TEST(IosIr, TheDpMergesGateMatmulsThatShareAnInput) {
  PerGateModel m;
  const ir::Graph& f = m.f.graph();
  ASSERT_EQ(count(f, ir::OpKind::MatMul), 8);
  const ios::PlannedGraph both = ios::plan_graph(f, {ios::Variant::both, 3, 8});
  EXPECT_EQ(both.merged_stages, 2);  // x·[W_i W_f W_o W_u] and [hl; hr]·[U_i U_f U_o U_u]
  EXPECT_EQ(count(both.graph, ir::OpKind::MatMul), 2);
  EXPECT_EQ(count(both.graph, ir::OpKind::Concat), count(f, ir::OpKind::Concat) + 2);
  // Without merged stages IOS only reorders: every matmul stays.
  const ios::PlannedGraph par = ios::plan_graph(f, {ios::Variant::parallel, 3, 8});
  EXPECT_EQ(par.merged_stages, 0);
  EXPECT_EQ(count(par.graph, ir::OpKind::MatMul), 8);
  EXPECT_EQ(par.graph.size(), f.size());
}

// Gate by gate over column slices of one stacked weight: the merged matmul reads the stacked weight itself.
TEST(IosIr, SlicesOfOneWeightMergeBackIntoIt) {
  ParameterSet ps{DType::f64, 3};
  ps.add("W", {kD, 4 * kH}, Init::uniform(-1, 1));
  VertexFunction f("sliced", kH, DType::f64);
  Symbol x = f.pull(kD), w = f.param(ps["W"]);
  Symbol sum = matmul(x, slice(w, 0, kH));
  for (int k = 1; k < 4; ++k) sum = sum * matmul(x, slice(w, k * kH, (k + 1) * kH));
  f.push(sum);
  const ios::PlannedGraph p = ios::plan_graph(f.graph(), {ios::Variant::both, 3, 8});
  EXPECT_EQ(p.merged_stages, 1);
  const std::vector<ir::NodeId> mm = p.graph.find(ir::OpKind::MatMul);
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(p.graph.node(p.graph.node(mm[0]).inputs[1]).op, ir::OpKind::Param);
  EXPECT_EQ(count(p.graph, ir::OpKind::Concat), 0);
}

TEST(IosIr, MergingIsCheaperUnderTheCostModelAndOnlyForSharedInputs) {
  PerGateModel m;
  const ir::Graph& f = m.f.graph();
  const std::vector<ios::IrPart> parts = ios::ir_parts(f);
  ASSERT_EQ(parts.size(), 1u);
  const ios::IrPart& part = parts[0];
  std::vector<int> x_mm, h_mm;  // local indices of the matmuls, by left operand
  for (size_t v = 0; v < part.nodes.size(); ++v) {
    const ir::Node& n = f.node(part.nodes[v]);
    if (n.op != ir::OpKind::MatMul) continue;
    (f.node(n.inputs[0]).op == ir::OpKind::Pull ? x_mm : h_mm).push_back(static_cast<int>(v));
  }
  ASSERT_EQ(x_mm.size(), 4u);
  ios::IrCostModel cost(f, part, 64);
  ios::OpSet xs = 0;
  double apart = 0;
  for (int v : x_mm) {
    xs |= ios::OpSet{1} << v;
    apart += cost.op_time(part.nodes[static_cast<size_t>(v)]);
  }
  EXPECT_TRUE(cost.mergeable(part.dag, xs));
  EXPECT_LT(cost.latency(part.dag, {ios::Stage::Kind::merged, {xs}}), apart);
  EXPECT_FALSE(cost.mergeable(part.dag, (ios::OpSet{1} << x_mm[0]) | (ios::OpSet{1} << h_mm[0])));
  EXPECT_FALSE(cost.mergeable(part.dag, ios::OpSet{1} << x_mm[0]));
}

TEST(IosIr, PartsFollowTheGraphAndBadPlansAreErrors) {
  PerGateModel m;
  const ir::Graph& f = m.f.graph();
  const std::vector<ios::IrPart> parts = ios::ir_parts(f, 3);
  size_t ops = 0;
  ir::NodeId last = -1;
  for (const ios::IrPart& part : parts) {
    EXPECT_LE(part.nodes.size(), 3u);
    for (ir::NodeId id : part.nodes) {
      EXPECT_GT(id, last);  // consecutive in id order: no edge back to an earlier part
      last = id;
      EXPECT_EQ(f.node(id).op, ir::OpKind::MatMul);
    }
    ops += part.nodes.size();
  }
  EXPECT_EQ(ops, 8u);
  // Planned part by part, the merges that fall into one part still happen.
  std::vector<ios::StagePlan> found;
  for (const ios::IrPart& part : parts) {
    ios::IrCostModel cost(f, part);
    found.push_back(ios::schedule(part.dag, cost, {ios::Variant::both, 3, 8}));
  }
  EXPECT_LT(count(ios::follow_plans(f, parts, found), ir::OpKind::MatMul), 8);
  EXPECT_CONTAINS(test::error_of([&] { ios::follow_plans(f, parts, {}); }), "plans");
  std::vector<ios::StagePlan> plans(parts.size());  // empty plans run nothing
  EXPECT_CONTAINS(test::error_of([&] { ios::follow_plans(f, parts, plans); }), "does not run every operator");
  EXPECT_CONTAINS(test::error_of([&] { ios::ir_parts(f, 65); }), "1 to 64");
}

// A program's static graph is reordered, never rewritten: a permutation of its nodes, each after its inputs.
TEST(IosIr, StaticGraphsFollowAPlanOrder) {
  PerGateModel m;
  const ir::Graph& g = m.p.graph();
  const std::vector<ir::NodeId> order = ios::plan_order(g, {ios::Variant::both, 3, 8});
  ASSERT_EQ(order.size(), g.size());
  std::vector<int> at(g.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) {
    ASSERT_GE(order[k], 0);
    ASSERT_LT(static_cast<size_t>(order[k]), g.size());
    EXPECT_EQ(at[static_cast<size_t>(order[k])], -1) << "node " << order[k] << " twice";
    at[static_cast<size_t>(order[k])] = static_cast<int>(k);
  }
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) EXPECT_LT(at[static_cast<size_t>(in)], at[static_cast<size_t>(n.id)]);
}

struct Outcome {
  double loss;
  std::vector<Tensor> grads;
};

Outcome train_step(PerGateModel& m, const GraphBatch& b, ExecutorOptions o, const ir::Graph** df = nullptr,
                   std::unique_ptr<Executor>* keep = nullptr) {
  auto ex = std::make_unique<Executor>(m.p, m.ps, o);
  ex->forward(b, Mode::train);
  Outcome r{ex->scalar(m.loss), {}};
  m.ps.zero_grad();
  ex->backward(m.loss);
  for (Parameter* prm : m.ps.all()) r.grads.push_back(prm->grad.clone());
  if (df) *df = &ex->vertex_gradient(m.hs);
  if (keep) *keep = std::move(ex);
  return r;
}

TEST(IosIr, PlannedFAndGradientGiveTheSameResults) {
  PerGateModel m;
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<InputGraph> graphs;
    for (int s = 0; s < 4; ++s) {
      graphs.push_back(test::random_tree(rng, 1 + static_cast<int>(rng() % 20), 2, true, "t" + std::to_string(s)));
      test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
    }
    const GraphBatch b = GraphBatch::of(graphs);
    for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
      const Outcome off = train_step(m, b, ExecutorOptions{.policy = policy}.without(Optimisation::ios));
      std::unique_ptr<Executor> ex;
      const ir::Graph* df = nullptr;
      const Outcome on = train_step(m, b, {.policy = policy}, &df, &ex);
      EXPECT_EQ(count(ex->vertex_function(m.hs), ir::OpKind::MatMul), 2);
      EXPECT_LE(std::abs(off.loss - on.loss), 1e-10 * std::max(1.0, std::abs(off.loss)));
      const auto params = m.ps.all();
      for (size_t k = 0; k < params.size(); ++k)
        EXPECT_LE(test::relative_error(off.grads[k], on.grads[k]), 1e-10) << params[k]->name;
      // Each merged weight's gradient is again one product straight into it (Aᵀ·Slice(dY)).
      for (ir::NodeId id : df->find(ir::OpKind::ParamGradOut)) {
        const ir::Node& out = df->node(id);
        if (out.attrs.name[0] == 'W' || out.attrs.name[0] == 'U') {
          EXPECT_EQ(df->node(out.inputs[0]).op, ir::OpKind::MatMul) << out.attrs.name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sylva
