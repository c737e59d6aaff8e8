// Children in place (Optimisation::children_in_place): in a minibatch of
// complete binary trees of one size, every parent's children are
// consecutive rows, so F's concat of the gathered messages is a view of the
// children's rows and ∂F writes its gradient straight into theirs. The
// same bits as with the option off -- for those batches, for batches where
// it cannot apply (trees of other shapes, complete trees of mixed sizes),
// and for batches of both kinds in turn -- under both policies; gradients
// against central differences; and the copies really gone where it applies.
#include <gtest/gtest.h>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 9, kClasses = 3;
constexpr int64_t kH = 4;

// gated: what the children send multiplied by the pull, so tasks that
// pulled only zero rows (id -1) send their children a gradient known to be
// zero (∂F then writes zeros into the children's rows, or skips).
struct Net {
  Program p{DType::f64};
  Symbol hidden, loss;
  Net(ParameterSet& ps, bool gated) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("W", {2 * kH, kH}, Init::glorot());
    ps.add("b", {kH}, Init::uniform(-0.5, 0.5));
    ps.add("Ws", {kH, kClasses}, Init::glorot());
    VertexFunction f("f", kH, DType::f64);
    const Symbol x = f.pull(kH);
    const Symbol kids = matmul(concat({f.gather(0), f.gather(1)}), f.param(ps["W"]));
    const Symbol h = tanh((gated ? kids * x : kids) + x + f.param(ps["b"]));
    f.scatter(h);
    f.push(h);
    hidden = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hidden, p.param(ps["Ws"])), p.input_ids("labels"));
  }
};

enum class Shape { complete, mixed_sizes, random };

std::vector<InputGraph> graphs(Shape shape, int n, uint64_t seed, bool gated) {
  std::mt19937_64 rng(seed);
  std::vector<InputGraph> out;
  const int32_t leaves = 1 << (1 + rng() % 3);  // 2, 4 or 8, one size for the batch
  for (int s = 0; s < n; ++s) {
    const std::string src = "t" + std::to_string(seed) + "." + std::to_string(s);
    if (shape == Shape::random) out.push_back(test::random_tree(rng, 1 + static_cast<int>(rng() % 15), 2, true, src));
    else out.push_back(complete_binary_tree(shape == Shape::complete ? leaves : 1 << (1 + s % 3), src));
    test::attach_random_ids(rng, out.back(), kVocab, kClasses);
    // Words on the leaves only (Tree-FC); gated: on half the internal vertices.
    std::vector<int32_t> x = out.back().ids("x");
    for (int32_t v = 0; v < out.back().num_vertices(); ++v)
      if (!out.back().children(v).empty() && (!gated || rng() % 2)) x[static_cast<size_t>(v)] = -1;
    out.back().set_ids("x", std::move(x));
  }
  return out;
}

struct Steps {
  std::vector<double> losses;
  std::vector<Tensor> grads;  // after every step, each parameter
  double fd_error = 0.0;      // W's and E's gradients against central differences, worst step (on only)
  int64_t copies = 0;         // concat and gather-gradient events
};

Steps run(const std::vector<Shape>& shapes, bool gated, BatchingPolicy policy, bool on) {
  ParameterSet ps{DType::f64, 3};
  Net m(ps, gated);
  Executor ex(m.p, ps, test::on_test_device(test::toggled({.policy = policy}, Optimisation::children_in_place, on)));
  Steps s;
  ex.set_observer([&](const OpEvent& e) {
    s.copies += e.node.op == ir::OpKind::Concat || e.node.op == ir::OpKind::GatherGradOut;
  });
  uint64_t seed = 1;
  for (Shape shape : shapes) {
    const std::vector<InputGraph> gs = graphs(shape, 2 + static_cast<int>(seed % 4), seed, gated);
    ++seed;
    const GraphBatch b = GraphBatch::of(gs);
    ex.forward(b, Mode::train);
    s.losses.push_back(ex.scalar(m.loss));
    ps.zero_grad();
    ex.backward(m.loss);
    for (Parameter* prm : ps.all()) s.grads.push_back(prm->grad.clone());
    if (on)  // every step: rows of the step before must not leak in
      for (const char* name : {"W", "E"})
        s.fd_error = std::max(s.fd_error, test::finite_difference_error(ex, b, m.loss, ps[name], 40));
  }
  return s;
}

TEST(ChildrenInPlace, SameBitsAsCopyingTheChildren) {
  // Batches that allow it and batches that do not, in turn, growing and shrinking.
  const std::vector<Shape> shapes = {Shape::complete, Shape::random, Shape::complete, Shape::mixed_sizes,
                                     Shape::complete, Shape::complete};
  for (bool gated : {false, true})
    for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
      SCOPED_TRACE(std::string(gated ? "gated" : "plain") + (policy == BatchingPolicy::Bfs ? ", bfs" : ", serial"));
      const Steps on = run(shapes, gated, policy, true), off = run(shapes, gated, policy, false);
      ASSERT_EQ(on.losses.size(), off.losses.size());
      for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
      ASSERT_EQ(on.grads.size(), off.grads.size());
      for (size_t k = 0; k < on.grads.size(); ++k)
        EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << "step " << k / 4 << ", parameter " << k % 4;
      EXPECT_LT(on.fd_error, 1e-6);
    }
}

TEST(ChildrenInPlace, CopiesNoRowWhereTheChildrenAreConsecutive) {
  for (bool gated : {false, true}) {
    SCOPED_TRACE(gated ? "gated" : "plain");
    // Complete trees of one size under BFS: no concat and no gather gradient runs.
    EXPECT_EQ(run({Shape::complete, Shape::complete}, gated, BatchingPolicy::Bfs, true).copies, 0);
    EXPECT_GT(run({Shape::complete, Shape::complete}, gated, BatchingPolicy::Bfs, false).copies, 0);
    // Other shapes copy as before.
    EXPECT_GT(run({Shape::mixed_sizes}, gated, BatchingPolicy::Bfs, true).copies, 0);
    EXPECT_GT(run({Shape::random}, gated, BatchingPolicy::Bfs, true).copies, 0);
  }
}

TEST(ChildrenInPlace, HoldsNoConcatRowsForParents) {
  const std::vector<InputGraph> gs = graphs(Shape::complete, 3, 2, false);
  const GraphBatch b = GraphBatch::of(gs);
  int64_t parents = 0;
  for (const InputGraph& g : gs)
    for (int32_t v = 0; v < g.num_vertices(); ++v) parents += !g.children(v).empty();
  size_t held[2] = {0, 0};
  for (bool on : {true, false}) {
    ParameterSet ps{DType::f64, 3};
    Net m(ps, false);
    Executor ex(m.p, ps, test::on_test_device(test::toggled({}, Optimisation::children_in_place, on)));
    ex.forward(b, Mode::train);
    ex.backward(m.loss);
    held[on] = ex.held_bytes();
  }
  // The concat's rows [parents, 2h] are views of the children's messages.
  EXPECT_LE(held[1] + static_cast<size_t>(parents * 2 * kH) * sizeof(double), held[0]);
}

}  // namespace
}  // namespace sylva
