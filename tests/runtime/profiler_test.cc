// The profiler: op categories, and aggregation of a real forward/backward
// checked against an independent tally of the same observer events.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "support/test_util.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/runtime/profiler.h"

namespace sylva {
namespace {

using ir::OpKind;

TEST(Profiler, OpCategories) {
  EXPECT_EQ(op_category(OpKind::MatMul), OpCategory::gemm);
  EXPECT_EQ(op_category(OpKind::Tanh), OpCategory::elementwise);
  EXPECT_EQ(op_category(OpKind::SigmoidGrad), OpCategory::elementwise);
  EXPECT_EQ(op_category(OpKind::DropoutMask), OpCategory::elementwise);
  EXPECT_EQ(op_category(OpKind::Gather), OpCategory::data_movement);
  EXPECT_EQ(op_category(OpKind::GatherGradOut), OpCategory::data_movement);
  EXPECT_EQ(op_category(OpKind::Lookup), OpCategory::data_movement);
  EXPECT_EQ(op_category(OpKind::SoftmaxCrossEntropyGrad), OpCategory::softmax_loss);
  EXPECT_EQ(op_category(OpKind::SumRows), OpCategory::reduction);
  EXPECT_EQ(op_category(OpKind::ParamGradOut), OpCategory::param_grad);
  EXPECT_EQ(op_category(OpKind::Param), OpCategory::other);
  EXPECT_CONTAINS(test::error_of([] { op_category(OpKind::Apply); }), "container");
  for (OpKind op : ir::all_ops()) {
    if (op != OpKind::Apply && op != OpKind::ApplyGrad) {
      EXPECT_NE(category_name(op_category(op)), std::string("?"));
    }
  }
}

TEST(Profiler, AggregatesEveryEventOfATrainingStep) {
  ParameterSet ps(DType::f32, 1);
  ps.add("E", {5, 4}, Init::uniform(-1, 1));
  ps.add("W", {8, 4}, Init::uniform(-1, 1));
  ps.add("Ws", {4, 3}, Init::uniform(-1, 1));
  VertexFunction f("cell", 4);
  Symbol h = tanh(matmul(concat({f.pull(4), f.gather(0)}), f.param(ps["W"])));
  f.scatter(h);
  f.push(h);
  Program p;
  Symbol logits = matmul(p.apply(f, lookup(p.param(ps["E"]), p.input_ids("w"))), p.param(ps["Ws"]));
  Symbol loss = softmax_cross_entropy(logits, p.input_ids("y"));
  std::mt19937_64 rng(3);
  std::vector<InputGraph> g = chains(random_lengths(rng, 6, 1, 7), "c");
  for (InputGraph& x : g) {
    x.set_ids("w", std::vector<int32_t>(static_cast<size_t>(x.num_vertices()), 2));
    x.set_ids("y", std::vector<int32_t>(static_cast<size_t>(x.num_vertices()), 1));
  }
  GraphBatch b = GraphBatch::of(g);

  Profiler prof;
  std::map<std::string, int64_t> calls;  // independent tally
  double apply_s = 0, body_s = 0, op_s = 0;
  Executor ex(p, ps);
  ex.set_observer([&](const OpEvent& e) {
    prof.record(e);
    const double s = std::chrono::duration<double>(e.elapsed).count();
    if (e.node.op == OpKind::Apply || e.node.op == OpKind::ApplyGrad) {
      apply_s += s;
      return;
    }
    ++calls[e.fused.empty() ? std::string(ir::op_name(e.node.op)) : "fused group"];
    op_s += s;
    if (e.phase != EventPhase::program) body_s += s;
  });
  ex.forward(b, Mode::train);
  ps.zero_grad();
  ex.backward(loss);

  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(prof.ops().size(), calls.size());
  for (const auto& [name, n] : calls) EXPECT_EQ(prof.ops().at(name).calls, n) << name;
  int64_t category_calls = 0;
  for (int c = 0; c < static_cast<int>(OpCategory::count_); ++c)
    category_calls += prof.category(static_cast<OpCategory>(c)).calls;
  int64_t all_calls = 0;
  for (const auto& [name, n] : calls) all_calls += n;
  EXPECT_EQ(category_calls, all_calls);
  EXPECT_GT(prof.category(OpCategory::gemm).calls, 0);
  EXPECT_GT(prof.category(OpCategory::softmax_loss).calls, 0);
  // Same events, summed in another order (per category): equal up to rounding.
  EXPECT_NEAR(prof.op_seconds(), op_s, 1e-9 * op_s);
  EXPECT_NEAR(prof.task_loop_seconds(), std::max(0.0, apply_s - body_s), 1e-9 * apply_s);
  // Without wall time nothing is "outside"; with it, the rest is.
  EXPECT_EQ(prof.outside_seconds(), 0.0);
  prof.add_wall_time(10.0);
  EXPECT_NEAR(prof.outside_seconds(), 10.0 - op_s - prof.task_loop_seconds(), 1e-12);
  const std::string r = prof.report();
  for (const char* want : {"GEMM", "softmax / loss", "task loop", "outside ops", "top ops", "matmul"})
    EXPECT_CONTAINS(r, want);
  prof.reset();
  EXPECT_TRUE(prof.ops().empty());
  EXPECT_EQ(prof.wall_seconds(), 0.0);
}

// FLOPs come from each op's registry entry: a GEMM x·W over every vertex
// counts 2·V·d·h however the vertices are batched, tanh one per element.
TEST(Profiler, CountsFlopsFromTheOpsFacts) {
  ParameterSet ps(DType::f64, 2);
  ps.add("E", {10, 4}, Init::uniform(-0.5, 0.5));
  ps.add("W", {4, 3}, Init::uniform(-0.5, 0.5));
  ps.add("Wo", {3, 5}, Init::uniform(-0.5, 0.5));
  VertexFunction f("proj", 3, DType::f64);
  Symbol h = tanh(matmul(f.pull(4), f.param(ps["W"])));
  f.push(h);
  Program p(DType::f64);
  Symbol hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
  Symbol logits = matmul(hs, p.param(ps["Wo"]));
  std::mt19937_64 rng(4);
  std::vector<InputGraph> g;
  for (size_t n : {3, 1, 4}) {  // vertices without children: F reads none
    g.push_back(InputGraph::from_children(std::vector<std::vector<int32_t>>(n)));
    test::attach_random_ids(rng, g.back(), 10, 5);
  }
  const GraphBatch b = GraphBatch::of(g);
  const int64_t V = b.num_vertices();
  for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
    Executor ex(p, ps, ExecutorOptions{.policy = policy}.without(Optimisation::fusion));
    Profiler prof;
    ex.set_observer(prof.observer());
    ex.forward(b, Mode::eval);
    EXPECT_EQ(prof.category(OpCategory::gemm).flops, 2 * V * 4 * 3 + 2 * V * 3 * 5);
    EXPECT_EQ(prof.category(OpCategory::elementwise).flops, V * 3);
    EXPECT_EQ(prof.category(OpCategory::data_movement).flops, 0);
    (void)logits;
  }
}

}  // namespace
}  // namespace sylva
