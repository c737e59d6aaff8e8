// select_rows: program-level ops on the labelled rows alone. A classifier
// over the selected rows computes the same loss and gradients as one over
// every vertex whose loss skips the unlabelled rows; mixing row counts, ids
// that are not input_ids and labels out of range are clear errors.
#include <gtest/gtest.h>

#include <random>

#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

// A tree cell and a classifier, on the selected rows or on all of them.
struct Model {
  explicit Model(bool select) {
    ps.add("E", {12, 3}, Init::uniform(-0.5, 0.5));
    ps.add("W", {3, 4}, Init::uniform(-0.5, 0.5));
    ps.add("U", {8, 4}, Init::uniform(-0.5, 0.5));
    ps.add("Wo", {4, 3}, Init::uniform(-0.5, 0.5));
    ps.add("bo", {3}, Init::uniform(-0.5, 0.5));
    Symbol h = tanh(matmul(f.pull(3), f.param(ps["W"])) + matmul(concat({f.gather(0), f.gather(1)}), f.param(ps["U"])));
    f.scatter(h);
    f.push(h);
    hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    labels = p.input_ids("labels");
    rows = select ? select_rows(hs, labels) : hs;
    Symbol y = select ? select_rows(labels, labels) : labels;
    loss = softmax_cross_entropy(matmul(rows, p.param(ps["Wo"])) + p.param(ps["bo"]), y);
  }
  ParameterSet ps{DType::f64, 5};
  VertexFunction f{"cell", 4, DType::f64};
  Program p{DType::f64};
  Symbol hs, labels, rows, loss;
};

std::vector<InputGraph> trees(uint64_t seed = 17) {
  std::mt19937_64 rng(seed);
  std::vector<InputGraph> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(random_tree(rng, 9, 2, /*allow_holes=*/true, "tree " + std::to_string(i)));
    test::attach_random_ids(rng, out.back(), 12, 3);
  }
  return out;
}

TEST(SelectRows, ValuesAreTheLabelledRowsInVertexOrder) {
  Model m(true);
  const std::vector<InputGraph> data = trees();
  const GraphBatch b = GraphBatch::of(data);
  Executor ex(m.p, m.ps);
  ex.forward(b, Mode::eval);
  const Tensor all = ex.value(m.hs), sel = ex.value(m.rows);
  const std::vector<int32_t>& labels = b.ids("labels");
  int64_t r = 0;
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] < 0) continue;
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(sel.at(r * 4 + j), all.at(static_cast<int64_t>(v) * 4 + j)) << "vertex " << v;
    ++r;
  }
  EXPECT_GT(r, 0);
  EXPECT_LT(r, static_cast<int64_t>(labels.size())) << "the fixture should leave some vertices unlabelled";
  EXPECT_EQ(sel.shape(), (Shape{r, 4}));
}

TEST(SelectRows, SameLossAndGradientsAsTheClassifierOverEveryRow) {
  const std::vector<InputGraph> data = trees();
  const GraphBatch b = GraphBatch::of(data);
  for (BatchingPolicy policy : {BatchingPolicy::Serial, BatchingPolicy::Bfs}) {
    Model all(false), sel(true);
    const test::LossAndGrads want = test::loss_and_grads(all.p, all.ps, b, all.loss, policy);
    const test::LossAndGrads got = test::loss_and_grads(sel.p, sel.ps, b, sel.loss, policy);
    EXPECT_GT(want.loss, 0.0);
    EXPECT_NEAR(got.loss, want.loss, 1e-12 * want.loss);
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (size_t k = 0; k < got.grads.size(); ++k)
      EXPECT_LE(test::relative_error(got.grads[k], want.grads[k]), 1e-12) << sel.ps.all()[k]->name;
  }
}

TEST(SelectRows, GradientsMatchFiniteDifferences) {
  Model m(true);
  const std::vector<InputGraph> data = trees(3);
  const GraphBatch b = GraphBatch::of(data);
  Executor ex(m.p, m.ps);
  ex.forward(b, Mode::train);
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (const char* name : {"W", "U", "Wo", "E"})
    EXPECT_LT(test::finite_difference_error(ex, b, m.loss, m.ps[name], 12), 1e-6) << name;
}

TEST(SelectRows, NoLabelledRowGivesZeroLossAndGradients) {
  Model m(true);
  std::vector<InputGraph> data = trees();
  for (InputGraph& g : data) g.set_ids("labels", std::vector<int32_t>(static_cast<size_t>(g.num_vertices()), -1));
  const GraphBatch b = GraphBatch::of(data);
  Executor ex(m.p, m.ps);
  ex.forward(b, Mode::train);
  EXPECT_EQ(ex.value(m.rows).shape(), (Shape{0, 4}));
  EXPECT_EQ(ex.scalar(m.loss), 0.0);
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (const char* name : {"W", "Wo"})
    for (int64_t i = 0; i < m.ps[name].grad.numel(); ++i) EXPECT_EQ(m.ps[name].grad.at(i), 0.0) << name;
}

// The selected ids of a lookup feed its sparse gradient: row id gets one
// unit per selected vertex whose id it is.
TEST(SelectRows, SelectedIdsDriveASparseLookupGradient) {
  ParameterSet ps(DType::f64, 2);
  ps.add("T", {12, 2}, Init::uniform(-1, 1));
  Program p(DType::f64);
  Symbol x = p.input_ids("x"), labels = p.input_ids("labels");
  Symbol loss = sum(lookup(p.param(ps["T"]), select_rows(x, labels)));
  const std::vector<InputGraph> data = trees();
  const GraphBatch b = GraphBatch::of(data);
  Executor ex(p, ps);
  ex.forward(b, Mode::train);
  ps.zero_grad();
  ex.backward(loss);
  std::vector<double> count(12, 0.0);
  for (size_t v = 0; v < b.ids("x").size(); ++v)
    if (b.ids("labels")[v] >= 0 && b.ids("x")[v] >= 0) count[static_cast<size_t>(b.ids("x")[v])] += 1;
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(ps["T"].grad.at(r * 2 + j), count[static_cast<size_t>(r)]) << "row " << r;
}

TEST(SelectRows, MixingSelectedAndPerVertexRowsIsAnError) {
  Model m(true);
  Symbol mixed = sum(m.rows + m.hs);
  const std::vector<InputGraph> data = trees();
  const GraphBatch b = GraphBatch::of(data);
  Executor ex(m.p, m.ps);
  const std::string msg = test::error_of([&] { ex.forward(b, Mode::eval); });
  EXPECT_CONTAINS(msg, "[add] input 1 has");
  EXPECT_CONTAINS(msg, "select_rows");
  (void)mixed;
}

TEST(SelectRows, SelectingSelectedRowsIsAnError) {
  Model m(true);
  Symbol twice = select_rows(m.rows, m.labels);
  const std::vector<InputGraph> data = trees();
  Executor ex(m.p, m.ps);
  EXPECT_CONTAINS(test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::eval); }), "cannot be selected again");
  (void)twice;
}

TEST(SelectRows, IdsMustBeInputIds) {
  Model m(true);
  Symbol bad = select_rows(m.hs, select_rows(m.labels, m.labels));
  EXPECT_CONTAINS(test::error_of([&] { Executor ex(m.p, m.ps); }), "[select_rows] ids must be a program's input_ids");
  (void)bad;
  Program p(DType::f64);
  EXPECT_CONTAINS(test::error_of([&] { select_rows(p.input_ids("a"), p.param(m.ps["Wo"])); }),
                  "ids must be per-vertex int32");
}

TEST(SelectRows, ALabelOutOfRangeNamesTheVertex) {
  Model m(true);
  std::vector<InputGraph> data = trees();
  std::vector<int32_t> labels = data[2].ids("labels");
  labels[1] = 7;  // 3 classes
  data[2].set_ids("labels", labels);
  Executor ex(m.p, m.ps);
  const std::string msg = test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::eval); });
  EXPECT_CONTAINS(msg, "tree 2");
  EXPECT_CONTAINS(msg, "labels id 7 out of range [0, 3)");
}

}  // namespace
}  // namespace sylva
