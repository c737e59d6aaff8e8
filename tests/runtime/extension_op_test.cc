// The "one place" claim: an elementwise op defined entirely outside Sylva's
// sources (tests/support/test_ops.cc) is planned, fused, differentiated,
// skipped when zero and profiled through the whole stack on the CPU, with
// the same results fused and unfused.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support/test_ops.h"
#include "support/test_util.h"
#include "sylva/backend/cpu_extension.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

// A tree cell whose elementwise tail uses cube between fusible ops.
struct CubicTreeModel {
  ParameterSet ps{DType::f64, 5};
  VertexFunction f{"cubic", 4, DType::f64};
  Program p{DType::f64};
  Symbol cubed, hs, loss;
  CubicTreeModel() {
    ps.add("E", {12, 3}, Init::uniform(-0.5, 0.5));
    ps.add("W", {3, 4}, Init::uniform(-0.5, 0.5));
    ps.add("U", {8, 4}, Init::uniform(-0.5, 0.5));
    ps.add("Wo", {4, 3}, Init::uniform(-0.5, 0.5));
    Symbol a = matmul(f.pull(3), f.param(ps["W"])) + matmul(concat({f.gather(0), f.gather(1)}), f.param(ps["U"]));
    cubed = test::cube(a);
    Symbol h = tanh(cubed) * sigmoid(a);
    f.scatter(h);
    f.push(h);
    hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels"));
  }
};

std::vector<InputGraph> trees() {
  std::mt19937_64 rng(17);
  std::vector<InputGraph> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(random_tree(rng, 9, 2, /*allow_holes=*/true, "tree " + std::to_string(i)));
    test::attach_random_ids(rng, out.back(), 12, 3);
  }
  return out;
}

struct Outcome {
  double loss = 0;
  std::vector<Tensor> grads;
  int cube_events = 0, fused_cube_events = 0;
  double elementwise_calls = 0;
};

Outcome run_model(bool fusion) {
  CubicTreeModel m;
  const std::vector<InputGraph> data = trees();
  const GraphBatch batch = GraphBatch::of(data);
  Executor ex(m.p, m.ps, fusion ? ExecutorOptions{} : ExecutorOptions{}.without(Optimisation::fusion));
  Outcome r;
  Profiler prof;
  ex.set_observer([&](const OpEvent& e) {
    prof.record(e);
    if (e.node.op == test::cube_op()) ++r.cube_events;
    for (ir::NodeId id : e.fused)
      if (e.graph.node(id).op == test::cube_op()) ++r.fused_cube_events;
  });
  ex.forward(batch, Mode::train);
  r.loss = ex.scalar(m.loss);
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (const Parameter* p : std::as_const(m.ps).all()) r.grads.push_back(p->grad.clone());
  r.elementwise_calls = static_cast<double>(prof.category(OpCategory::elementwise).calls);
  // The plan fuses cube by its flag alone.
  const plan::VertexPlan& plan = ex.vertex_plan(m.hs);
  bool in_group = false;
  for (const plan::FusedGroup& g : plan.forward.fused)
    for (ir::NodeId id : g.members) in_group = in_group || plan.forward.graph->node(id).op == test::cube_op();
  EXPECT_EQ(in_group, fusion);
  // Its gradient rule reached ∂F, and the gradient is right.
  for (const char* name : {"W", "U", "E"})
    // 1e-5: central differences of a cube carry more truncation error than the other tests' cells (a
    // wrong rule, 2x² for 3x², gives 0.1 and more).
    EXPECT_LT(test::finite_difference_error(ex, batch, m.loss, m.ps[name], 24), 1e-5) << name << " fusion " << fusion;
  return r;
}

TEST(ExtensionOp, RunsFusedAndUnfusedThroughTheWholeStackWithTheSameResults) {
  const Outcome fused = run_model(true), plain = run_model(false);
  EXPECT_GT(fused.fused_cube_events, 0) << "cube ran inside fused groups";
  EXPECT_EQ(fused.cube_events, 0) << "and never on its own";
  EXPECT_GT(plain.cube_events, 0) << "without fusion it runs as its own kernel";
  EXPECT_EQ(plain.fused_cube_events, 0);
  EXPECT_GT(fused.elementwise_calls, 0);
  EXPECT_NEAR(fused.loss, plain.loss, 1e-12 * std::abs(plain.loss));
  ASSERT_EQ(fused.grads.size(), plain.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) EXPECT_LT(test::relative_error(fused.grads[i], plain.grads[i]), 1e-12) << i;
}

TEST(ExtensionOp, IsARegisteredOpWithItsFacts) {
  const ir::OpKind k = test::cube_op();
  EXPECT_GE(static_cast<size_t>(k), static_cast<size_t>(ir::OpKind::Count_));
  EXPECT_EQ(ir::op_name(k), "cube");
  EXPECT_TRUE(ir::fusible(k));
  EXPECT_EQ(op_category(k), OpCategory::elementwise);
  const std::vector<ir::OpKind> all = ir::all_ops();
  EXPECT_NE(std::find(all.begin(), all.end(), k), all.end());
  EXPECT_TRUE(backend_for(Device::cpu()).supports(k));
  // Registering again is an error naming the op.
  const std::string e = test::error_of([] {
    ir::register_op({"cube", ir::OpFlag::elementwise, 1, 1, ir::op_def(test::cube_op()).infer, nullptr});
  });
  EXPECT_NE(e.find("'cube' exists already"), std::string::npos) << e;
  EXPECT_NE(test::error_of([&] { cpu::register_unary_kernel(ir::OpKind::Tanh, {}); }).find("built in"),
            std::string::npos);
}

}  // namespace
}  // namespace sylva
