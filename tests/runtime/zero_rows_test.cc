// Known-zero rows left unwritten (skip_zero_work with fused groups): a
// value known to be zero in a task -- a product of absent children, rows
// that pulled id -1, the pushed gradient of a task none of whose rows the
// program reads -- is handed to a fused group as one row of zeros, and
// where only fused groups read it its rows are not zero-filled at all.
// Against every skip off, under both policies, over batches that grow and
// shrink (rows of earlier tasks and batches stay behind in the arenas):
// the same losses and gradients, and the gradients against central
// differences every step; the pushed gradient copied only for tasks that
// have one; no gather run for a task whose children are all absent; and
// outputs of fused groups that nobody needs in a task left unwritten.
#include <gtest/gtest.h>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 9, kClasses = 3;
constexpr int64_t kH = 5;

using test::Family;

// F: test::family_cell (h = tanh(kids·W + x): kids·W is known zero at
// leaves, x where the id is -1); the classifier reads the labelled rows.
struct Net {
  Program p{DType::f64};
  Symbol hidden, loss;
  Net(ParameterSet& ps, Family family) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("Ws", {kH, kClasses}, Init::glorot());
    const VertexFunction f = test::family_cell(ps, family, kH);
    const Symbol labels = p.input_ids("labels");
    hidden = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(select_rows(hidden, labels), p.param(ps["Ws"])), select_rows(labels, labels));
  }
};

// test::growing_batches with labels at the roots only (Tree-FC's pattern):
// most tasks then have no row the classifier reads.
std::vector<std::vector<InputGraph>> root_labelled(Family family, uint64_t seed) {
  std::vector<std::vector<InputGraph>> out = test::growing_batches(family, seed, kVocab, kClasses);
  for (std::vector<InputGraph>& graphs : out)
    for (InputGraph& g : graphs) {
      std::vector<uint8_t> child(static_cast<size_t>(g.num_vertices()), 0);
      for (int32_t v = 0; v < g.num_vertices(); ++v)
        for (int32_t c : g.children(v))
          if (c >= 0) child[static_cast<size_t>(c)] = 1;
      std::vector<int32_t> labels(static_cast<size_t>(g.num_vertices()), -1);
      for (int32_t v = 0; v < g.num_vertices(); ++v)
        if (!child[static_cast<size_t>(v)]) labels[static_cast<size_t>(v)] = v % kClasses;
      g.set_ids("labels", std::move(labels));
    }
  return out;
}

struct Outcome {
  test::StepRecord steps;
  int64_t pushed_rows = 0, vertices = 0;  // rows push_grad_in copied; vertices of all batches
  int64_t gathers = 0, first_task_gathers = 0;  // gathers F ran; those of each step's first task
};

Outcome run(Family family, BatchingPolicy policy, bool skip) {
  ParameterSet ps{DType::f64, 3};
  Net m(ps, family);
  Executor ex(m.p, ps, test::on_test_device(test::toggled({.policy = policy}, Optimisation::skip_zero_work, skip)));
  Outcome r;
  ex.set_observer([&](const OpEvent& e) {
    if (e.node.op == ir::OpKind::PushGradIn) r.pushed_rows += e.rows;
    if (e.node.op == ir::OpKind::Gather) {
      ++r.gathers;
      r.first_task_gathers += e.task == 0;
    }
  });
  const std::vector<std::vector<InputGraph>> batches = root_labelled(family, 23);
  for (const std::vector<InputGraph>& graphs : batches)
    for (const InputGraph& g : graphs) r.vertices += g.num_vertices();
  r.steps = test::step_through(ex, ps, m.loss, m.hidden, batches, skip);
  return r;
}

TEST(ZeroRows, SameResultsAsComputingTheZeros) {
  for (Family family : {Family::tree, Family::chain, Family::dag, Family::gated_tree})
    for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
      SCOPED_TRACE(test::case_name(family, 0, policy));
      const Outcome on = run(family, policy, true), off = run(family, policy, false);
      ASSERT_EQ(on.steps.losses.size(), off.steps.losses.size());
      for (size_t k = 0; k < on.steps.losses.size(); ++k)
        EXPECT_NEAR(on.steps.losses[k], off.steps.losses[k], 1e-12 * std::abs(off.steps.losses[k])) << "step " << k;
      ASSERT_EQ(on.steps.grads.size(), off.steps.grads.size());
      for (size_t k = 0; k < on.steps.grads.size(); ++k)
        EXPECT_LT(test::relative_error(on.steps.grads[k], off.steps.grads[k]), 1e-12) << "parameter " << k;
      EXPECT_LT(test::relative_error(on.steps.shown, off.steps.shown), 1e-12) << "value() of the apply";
      EXPECT_LT(on.steps.fd_error, 1e-6);
    }
}

TEST(ZeroRows, CopiesThePushedGradientOnlyForTasksThatHaveOne) {
  for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
    SCOPED_TRACE(policy == BatchingPolicy::Bfs ? "bfs" : "serial");
    const Outcome on = run(Family::tree, policy, true), off = run(Family::tree, policy, false);
    EXPECT_EQ(off.pushed_rows, off.vertices) << "without skipping, every row's pushed gradient is copied";
    // Under BFS the roots of trees of different heights share tasks with
    // unlabelled vertices, so some of those rows are still copied.
    EXPECT_GT(on.pushed_rows, 0);
    EXPECT_LT(on.pushed_rows, on.vertices);
  }
}

// The gated tree's F multiplies each gathered message by x before the
// concat, so its gathers are values of their own (no row window). Under BFS
// the first task is the leaves: both slots absent in every row, the
// gathered messages known zero, and only products that are then zero too
// read them -- so they are not gathered (not even as rows of zeros).
TEST(ZeroRows, GathersNothingForATaskWhoseChildrenAreAllAbsent) {
  const Outcome on = run(Family::gated_tree, BatchingPolicy::Bfs, true);
  const Outcome off = run(Family::gated_tree, BatchingPolicy::Bfs, false);
  EXPECT_GT(off.first_task_gathers, 0) << "without skipping, the leaves gather their absent children";
  EXPECT_EQ(on.first_task_gathers, 0);
  EXPECT_GT(on.gathers, 0) << "the other tasks gather their children";
}

// The gated tree's ∂F sends each child d[gather(k)] = d[kids]'s block ⊙ x,
// an output of its fused group that only that task's gather gradient reads
// (a task-local value). At the leaves nobody needs it: with trimmed groups
// it is not written there, so its block is sized by the tasks above. One
// complete tree of 4 leaves, then the same with 8 lone vertices beside it
// (the leaf task grows from 4 rows to 12, the others stay): with trimming
// the values held grow by at least those 8 rows of it less than without.
TEST(ZeroRows, FusedGroupsLeaveOutputsNobodyNeedsUnwritten) {
  const auto held = [](bool trim, int lone) {
    std::vector<InputGraph> graphs{complete_binary_tree(4, "tree")};
    for (int k = 0; k < lone; ++k) graphs.push_back(complete_binary_tree(1, "lone " + std::to_string(k)));
    for (InputGraph& g : graphs) {
      std::vector<int32_t> x(static_cast<size_t>(g.num_vertices())), labels(x.size(), 1);
      for (int32_t v = 0; v < g.num_vertices(); ++v) x[static_cast<size_t>(v)] = v % kVocab;
      g.set_ids("x", x);
      g.set_ids("labels", labels);
    }
    ParameterSet ps{DType::f64, 3};
    Net m(ps, Family::gated_tree);
    Executor ex(m.p, ps, test::on_test_device(test::toggled({.policy = BatchingPolicy::Bfs}, Optimisation::trim_fused_zeros, trim)));
    ex.forward(GraphBatch::of(graphs), Mode::train);
    ps.zero_grad();
    ex.backward(m.loss);
    return ex.held_bytes();
  };
  const size_t on = held(true, 8) - held(true, 0), off = held(false, 8) - held(false, 0);
  EXPECT_GE(off, on + static_cast<size_t>(8 * kH) * sizeof(double))
      << "held bytes grew by " << on << " with trimmed groups, " << off << " without";
}

// A fused group none of whose outputs a task needs does not run at all (a
// backend that compiles fused kernels would otherwise be handed a program
// with no output). F: h = tanh([tanh(h_l); tanh(h_r)]·W + x); ∂F's group of
// the children's gradients (a slice of dG·Wᵀ through tanh's gradient, per
// child) has nothing to write at the leaves.
TEST(ZeroRows, AGroupWithNothingToWriteDoesNotRun) {
  const auto leaf_groups = [](bool trim) {
    ParameterSet ps{DType::f64, 3};
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("W", {2 * kH, kH}, Init::glorot());
    VertexFunction f("f", kH, DType::f64);
    const Symbol h = tanh(matmul(concat({tanh(f.gather(0)), tanh(f.gather(1))}), f.param(ps["W"])) + f.pull(kH));
    f.scatter(h);
    f.push(h);
    Program p(DType::f64);
    const Symbol loss = sum(p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x"))));
    std::vector<InputGraph> graphs{complete_binary_tree(4, "tree")};
    InputGraph& g = graphs[0];
    std::vector<int32_t> x(static_cast<size_t>(g.num_vertices()));
    for (int32_t v = 0; v < g.num_vertices(); ++v) x[static_cast<size_t>(v)] = v % kVocab;
    g.set_ids("x", x);
    Executor ex(p, ps, test::on_test_device(test::toggled({.policy = BatchingPolicy::Bfs}, Optimisation::trim_fused_zeros, trim)));
    int groups = 0;  // fused groups ∂F ran for the leaf task
    ex.set_observer([&](const OpEvent& e) {
      if (e.graph.kind() == ir::GraphKind::vertex_gradient && e.task == 0 && !e.fused.empty()) ++groups;
    });
    ex.forward(GraphBatch::of(graphs), Mode::train);
    ps.zero_grad();
    ex.backward(loss);
    return groups;
  };
  EXPECT_LT(leaf_groups(true), leaf_groups(false));
}

}  // namespace
}  // namespace sylva
