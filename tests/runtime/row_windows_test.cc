// Row windows (Optimisation::row_windows): a concat of gathered children
// filled straight from the children's rows, and gather gradients added
// straight from a slice's columns, give exactly the results of gathering
// and slicing into values of their own, and those ops then do not run.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "sylva/backend/backend.h"
#include "sylva/core/error.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/executor.h"
#include "support/test_device.h"
#include "support/test_util.h"

namespace sylva {
namespace {

constexpr int kVocab = 13, kClasses = 3, kH = 4;

// Tree-FC's cell with up to `slots` children: h = relu([h_0; ...]·W + x + b),
// a classifier at every labelled vertex.
struct Model {
  ParameterSet ps{DType::f64, 7};
  Program p{DType::f64};
  Symbol loss;
  explicit Model(int slots) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("W", {slots * kH, kH}, Init::uniform(-0.6, 0.6));
    ps.add("b", {kH}, Init::uniform(-0.3, 0.3));
    ps.add("Wo", {kH, kClasses}, Init::uniform(-1, 1));
    VertexFunction f("fc", kH, DType::f64);
    Symbol x = f.pull(kH);
    std::vector<Symbol> children;
    for (int s = 0; s < slots; ++s) children.push_back(f.gather(s));
    Symbol h = relu(matmul(concat(children), f.param(ps["W"])) + x + f.param(ps["b"]));
    f.scatter(h);
    f.push(h);
    Symbol hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels"));
  }
};

struct Outcome {
  double loss = 0;
  std::vector<Tensor> grads;
  std::map<std::string, int> events;  // op name -> events, F and ∂F
};

Outcome run(Model& m, const GraphBatch& b, ExecutorOptions o) {
  Executor ex(m.p, m.ps, test::on_test_device(o));
  Outcome r;
  ex.set_observer([&](const OpEvent& e) { ++r.events[std::string(ir::op_name(e.node.op))]; });
  ex.forward(b, Mode::train);
  r.loss = ex.scalar(m.loss);
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (Parameter* prm : m.ps.all()) r.grads.push_back(prm->grad.clone());
  return r;
}

std::vector<InputGraph> random_trees(std::mt19937_64& rng, int slots, int trees) {
  std::vector<InputGraph> graphs;
  for (int k = 0; k < trees; ++k) {
    graphs.push_back(test::random_tree(rng, 1 + static_cast<int>(rng() % 20), slots, true, "tree " + std::to_string(k)));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  return graphs;
}

TEST(RowWindows, GiveBitwiseTheResultsOfWholeValues) {
  std::mt19937_64 rng(17);
  for (int slots : {1, 2, 3}) {
    Model m(slots);
    for (int trial = 0; trial < 6; ++trial) {
      const std::vector<InputGraph> trees = random_trees(rng, slots, 1 + trial);
      const GraphBatch b = GraphBatch::of(trees);
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial})
        for (bool skip : {true, false}) {
          const std::string which = std::to_string(slots) + " slots, trial " + std::to_string(trial) + ", " +
                                    policy_name(policy) + (skip ? ", skipping zero work" : "");
          const Outcome off = run(m, b, test::toggled({.policy = policy}, Optimisation::skip_zero_work, skip).without(Optimisation::row_windows));
          const Outcome on = run(m, b, test::toggled({.policy = policy}, Optimisation::skip_zero_work, skip));
          EXPECT_EQ(on.loss, off.loss) << which;
          for (size_t k = 0; k < on.grads.size(); ++k)
            EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << which << " " << m.ps.all()[k]->name;
        }
    }
  }
}

TEST(RowWindows, GathersAndSlicesOfTheWindowDoNotRun) {
  std::mt19937_64 rng(3);
  Model m(2);
  const std::vector<InputGraph> trees = random_trees(rng, 2, 5);
  const GraphBatch b = GraphBatch::of(trees);
  const Outcome off = run(m, b, ExecutorOptions{.policy = BatchingPolicy::Bfs}.without(Optimisation::row_windows));
  const Outcome on = run(m, b, {.policy = BatchingPolicy::Bfs});
  EXPECT_GT(off.events.count("gather") ? off.events.at("gather") : 0, 0);
  EXPECT_GT(off.events.count("slice") ? off.events.at("slice") : 0, 0);
  const ExecutorOptions device = test::on_test_device();
  if (!(device.backend ? *device.backend : backend_for(device.device)).has_row_windows()) {
    EXPECT_EQ(on.events, off.events) << "a backend without row windows runs the gathers and slices";
    return;
  }
  EXPECT_EQ(on.events.count("gather"), 0u) << "the concat reads the children's rows itself";
  EXPECT_EQ(on.events.count("slice"), 0u) << "the gather gradients read d[concat]'s columns themselves";
  EXPECT_EQ(on.events.at("concat"), off.events.at("concat"));
  EXPECT_EQ(on.events.at("gather_grad_out"), off.events.at("gather_grad_out"));
}

// A binary LSTM-like cell that scatters the message [h; c] and pushes h,
// which ∂F does not read: with row windows the plan keeps no copy of h
// beside the message (VertexPlan::push_col), and the pushed rows, read
// from the message's columns, reach the program unchanged, through a
// product over every vertex or straight from F's rows (select_rows).
struct MessageModel {
  ParameterSet ps{DType::f64, 11};
  Program p{DType::f64};
  VertexFunction f{"lstmish", 2 * kH, DType::f64};
  Symbol h, loss, hidden;
  explicit MessageModel(bool select) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("U", {2 * kH, 2 * kH}, Init::uniform(-0.6, 0.6));
    ps.add("Wo", {kH, kClasses}, Init::uniform(-1, 1));
    Symbol x = f.pull(kH);
    auto [hl, cl] = split<2>(f.gather(0));
    auto [hr, cr] = split<2>(f.gather(1));
    auto [a, o] = split<2>(matmul(concat({hl, hr}), f.param(ps["U"])));
    Symbol c = tanh(a + x) + sigmoid(o) * (cl + cr);
    h = sigmoid(o) * tanh(c);
    f.scatter(concat({h, c}));
    f.push(h);
    hidden = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    Symbol labels = p.input_ids("labels");
    Symbol rows = select ? select_rows(hidden, labels) : hidden;
    if (select) labels = select_rows(labels, labels);
    loss = softmax_cross_entropy(matmul(rows, p.param(ps["Wo"])), labels);
  }
};

TEST(RowWindows, ThePushedRowsComeFromTheMessageColumns) {
  std::mt19937_64 rng(29);
  for (bool select : {false, true}) {
    MessageModel m(select);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<InputGraph> trees = random_trees(rng, 2, 1 + 2 * trial);
      for (InputGraph& g : trees) {  // about half the vertices labelled, the first always
        std::vector<int32_t> labels = g.ids("labels");
        for (size_t v = 1; v < labels.size(); ++v)
          if (rng() % 2) labels[v] = -1;
        g.set_ids("labels", std::move(labels));
      }
      const GraphBatch b = GraphBatch::of(trees);
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
        const std::string which = std::string(select ? "select_rows" : "every row") + ", trial " +
                                  std::to_string(trial) + ", " + policy_name(policy);
        const auto outcome = [&](bool windows) {
          Executor ex(m.p, m.ps, test::on_test_device(test::toggled({.policy = policy}, Optimisation::row_windows, windows)));
          ex.forward(b, Mode::train);
          std::pair<double, std::vector<Tensor>> r{ex.scalar(m.loss), {}};
          m.ps.zero_grad();
          ex.backward(m.loss);
          for (Parameter* prm : m.ps.all()) r.second.push_back(prm->grad.clone());
          if (windows && ex.backend().has_row_windows()) {
            const plan::VertexPlan& vp = ex.vertex_plan(m.hidden);
            EXPECT_EQ(vp.push_col, 0) << which;
            EXPECT_TRUE(vp.forward.task_local[static_cast<size_t>(vp.push_source)]) << which << ": h kept beside [h; c]";
          }
          return r;
        };
        const auto off = outcome(false), on = outcome(true);
        EXPECT_EQ(on.first, off.first) << which;
        for (size_t k = 0; k < on.second.size(); ++k)
          EXPECT_EQ(test::relative_error(on.second[k], off.second[k]), 0.0) << which << " " << m.ps.all()[k]->name;
      }
    }
  }
}

TEST(RowWindows, TheCpuBackendMovesColumnWindowsOfIndexedRows) {
  Backend& cpu = backend_for(Device::cpu());
  ASSERT_TRUE(cpu.has_row_windows());
  std::vector<double> src(12), dst(12, 0.0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<double>(i + 1);  // row r: 4r+1 .. 4r+4
  const MatView s{src.data(), 3, 4, DType::f64}, d{dst.data(), 2, 6, DType::f64};
  const std::vector<int32_t> from{2, -1}, to{1, 0};
  // Columns 1..2 of source row 2 (and of no row) into columns 3..4 of rows 1 (and 0).
  cpu.move_row_windows(s, from, d, to, {.src_col = 1, .dst_col = 3, .cols = 2}, false);
  EXPECT_EQ(dst, (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 11, 0}));
  // Adding skips the missing source row and leaves the other columns alone.
  cpu.move_row_windows(s, from, d, to, {.src_col = 0, .dst_col = 3, .cols = 2}, true);
  EXPECT_EQ(dst, (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 0, 19, 21, 0}));
}

}  // namespace
}  // namespace sylva
