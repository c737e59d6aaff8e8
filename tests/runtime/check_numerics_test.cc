// ExecutorOptions::check_numerics: a NaN or infinity planted in a vertex
// function (or the program), forward or backward, is reported where it
// first appears -- pass, op, vertex, sample, step -- not as a NaN loss.
#include <gtest/gtest.h>

#include <cmath>

#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

// h = 1000 * log(x) + h_child, x the vertex's row of E. A negative row
// of E makes log NaN in F; a row of 1e-37 keeps F finite (-85,000) but
// overflows ∂F (1000 / 1e-37 > FLT_MAX).
struct Planted {
  explicit Planted(float row3) {
    ps.add("E", {6, 2}, Init::uniform(0.5, 2.0));
    ps["E"].value.set(6, row3);
    ps["E"].value.set(7, row3);
    Symbol h = scale(log(f.pull(2)), 1000.0) + f.gather(0);
    f.scatter(h);
    f.push(h);
    x = lookup(p.param(ps["E"]), p.input_ids("words"));
    hs = p.apply(f, x);
    loss = sum(hs);
  }
  ParameterSet ps{DType::f32, 3};
  VertexFunction f{"planted", 2, DType::f32};
  Program p{DType::f32};
  Symbol x, hs, loss;
};

// Four chains of 3 vertices; only vertex 1 of "chain 2" reads row 3.
std::vector<InputGraph> chains() {
  std::vector<InputGraph> out;
  for (int i = 0; i < 4; ++i) {
    InputGraph g = InputGraph::from_parents(std::vector<int32_t>{1, 2, -1}, "chain " + std::to_string(i));
    g.set_ids("words", {i == 2 ? 0 : 1, i == 2 ? 3 : 2, 4});
    out.push_back(std::move(g));
  }
  return out;
}

TEST(CheckNumerics, ANanInTheForwardPassOfFNamesTheOpVertexAndStep) {
  for (bool fusion : {true, false}) {
    Planted m(-1.0f);
    const std::vector<InputGraph> data = chains();
    Executor ex(m.p, m.ps, fusion ? ExecutorOptions{.check_numerics = true} : ExecutorOptions{.check_numerics = true}.without(Optimisation::fusion));
    const std::string msg = test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::train); });
    EXPECT_CONTAINS(msg, "[check_numerics] nan first appeared in the forward pass of vertex function 'planted' at step 1");
    EXPECT_CONTAINS(msg, "(log)");
    EXPECT_CONTAINS(msg, "wrote it for sample 2 (chain 2) vertex 1");
  }
}

TEST(CheckNumerics, AnInfinityInTheBackwardPassOfFNamesTheVertex) {
  for (bool fusion : {true, false}) {
    Planted m(1e-37f);
    const std::vector<InputGraph> data = chains();
    const GraphBatch b = GraphBatch::of(data);
    Executor ex(m.p, m.ps, fusion ? ExecutorOptions{.check_numerics = true} : ExecutorOptions{.check_numerics = true}.without(Optimisation::fusion));
    ex.forward(b, Mode::train);  // finite
    EXPECT_TRUE(std::isfinite(ex.scalar(m.loss)));
    const std::string msg = test::error_of([&] { ex.backward(m.loss); });
    EXPECT_CONTAINS(msg, "inf first appeared in the backward pass of vertex function 'planted' at step 1");
    EXPECT_CONTAINS(msg, "wrote it for sample 2 (chain 2) vertex 1");
  }
}

TEST(CheckNumerics, ANanInTheProgramNamesTheVertex) {
  Planted m(-1.0f);
  Program p(DType::f32);
  Symbol loss = sum(log(lookup(p.param(m.ps["E"]), p.input_ids("words"))));
  const std::vector<InputGraph> data = chains();
  Executor ex(p, m.ps, {.check_numerics = true});
  const std::string msg = test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::train); });
  EXPECT_CONTAINS(msg, "nan first appeared in the forward pass of the program at step 1: node %");
  EXPECT_CONTAINS(msg, "(log) wrote it for sample 2 (chain 2) vertex 1, at row 7");
  (void)loss;
}

TEST(CheckNumerics, OffByDefaultTheNanReachesTheLoss) {
  Planted m(-1.0f);
  const std::vector<InputGraph> data = chains();
  Executor ex(m.p, m.ps);
  ex.forward(GraphBatch::of(data), Mode::train);
  EXPECT_TRUE(std::isnan(ex.scalar(m.loss)));
}

TEST(CheckNumerics, FiniteTrainingIsUnchangedWithTheCheckOn) {
  Planted on(1.0f), off(1.0f);
  const std::vector<InputGraph> data = chains();
  const GraphBatch b = GraphBatch::of(data);
  Executor a(on.p, on.ps, {.check_numerics = true}), c(off.p, off.ps);
  a.forward(b, Mode::train);
  c.forward(b, Mode::train);
  EXPECT_EQ(a.scalar(on.loss), c.scalar(off.loss));
  a.backward(on.loss);
  c.backward(off.loss);
  EXPECT_EQ(test::relative_error(on.ps["E"].grad, off.ps["E"].grad), 0.0);
}

// Trees through a cell whose fused groups leave outputs unwritten at the
// leaves (test::Family::gated_tree: ∂F's gradients for absent children):
// the check reads only what the groups wrote, and changes no result.
TEST(CheckNumerics, FiniteTreeTrainingIsUnchangedWithTheCheckOn) {
  constexpr int64_t kH = 4;
  constexpr int32_t kVocab = 7;
  const auto run = [&](bool check) {
    ParameterSet ps{DType::f64, 5};
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    const VertexFunction f = test::family_cell(ps, test::Family::gated_tree, kH);
    Program p(DType::f64);
    const Symbol loss = sum(p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x"))));
    Executor ex(p, ps, {.check_numerics = check});
    std::vector<double> out;
    for (const std::vector<InputGraph>& graphs : test::growing_batches(test::Family::gated_tree, 3, kVocab, 3)) {
      ex.forward(GraphBatch::of(graphs), Mode::train);
      out.push_back(ex.scalar(loss));
      ps.zero_grad();
      ex.backward(loss);
      for (Parameter* prm : ps.all())
        for (int64_t k = 0; k < prm->grad.numel(); ++k) out.push_back(prm->grad.at(k));
    }
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

}  // namespace
}  // namespace sylva
