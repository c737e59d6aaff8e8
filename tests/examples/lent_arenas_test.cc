// Lent arenas (Optimisation::lend_forward_arenas): a Tree-LSTM's x·W,
// computed before F's loop for every row and read only by its task's gate
// group, lends its arena to ∂F's gate gradients (kept for every row for
// the lazy weight gradients).
// The same losses, gradients and parameters, bit for bit, over Adam steps
// whose batches grow and shrink, for both cells, and after two backward()
// calls of one forward(); and less memory held, by at least the gate
// gradients' rows.
#include <gtest/gtest.h>

#include "support/test_util.h"
#include "sylva/sylva.h"
#include "tree_lstm_model.h"
#include "treebank.h"

namespace sylva::examples {
namespace {

constexpr int64_t kHidden = 8;

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> grads, values;  // after the last step, per parameter
  size_t held = 0;                    // Executor::held_bytes() after the last step
};

Trained train(TreeLstmCell cell, const std::vector<std::vector<InputGraph>>& batches, int64_t vocab, bool lend) {
  const TreeLstmConfig cfg{.vocab = vocab, .dim = 6, .hidden = kHidden, .dropout = 0.0, .init_scale = 0.5,
                           .cell = cell};
  ParameterSet ps{DType::f32, 3};
  add_tree_lstm_params(ps, cfg);
  TreeLstmModel m(ps, cfg);
  Executor ex(m.program, ps, lend ? ExecutorOptions{} : ExecutorOptions{}.without(Optimisation::lend_forward_arenas));
  Adam adam({.lr = 0.01});
  Trained r;
  for (const std::vector<InputGraph>& b : batches) {
    ex.forward(GraphBatch::of(b), Mode::train);
    r.losses.push_back(ex.scalar(m.loss));
    ps.zero_grad();
    ex.backward(m.loss);
    adam.step(ps);
  }
  for (Parameter* p : ps.all()) {
    r.grads.push_back(p->grad.clone());
    r.values.push_back(p->value.clone());
  }
  r.held = ex.held_bytes();
  return r;
}

TEST(LentArenas, SameBitsForBothCellsOverBatchesThatGrowAndShrink) {
  const Treebank tb = synthetic_treebank(23, 40, 0, 0);
  std::vector<std::vector<InputGraph>> batches;
  size_t at = 0;
  for (size_t n : {5, 17, 2, 11, 5}) {  // rows of earlier batches stay in the shared arenas
    batches.emplace_back(tb.train.begin() + static_cast<std::ptrdiff_t>(at),
                         tb.train.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  for (TreeLstmCell cell : {TreeLstmCell::tai, TreeLstmCell::dynet}) {
    SCOPED_TRACE(tree_lstm_cell_name(cell));
    const Trained on = train(cell, batches, tb.vocab.size(), true), off = train(cell, batches, tb.vocab.size(), false);
    ASSERT_EQ(on.losses.size(), off.losses.size());
    for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
    for (size_t k = 0; k < on.grads.size(); ++k) {
      EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << "gradient of parameter " << k;
      EXPECT_EQ(test::relative_error(on.values[k], off.values[k]), 0.0) << "value of parameter " << k;
    }
  }
}

// ∂F never reads a lender, so a second backward() after one forward()
// (two losses, say) computes what it computed without lending.
TEST(LentArenas, ASecondBackwardAfterOneForwardIsUnchanged) {
  const Treebank tb = synthetic_treebank(31, 9, 0, 0);
  for (TreeLstmCell cell : {TreeLstmCell::tai, TreeLstmCell::dynet}) {
    SCOPED_TRACE(tree_lstm_cell_name(cell));
    std::vector<std::vector<Tensor>> grads;
    for (bool lend : {true, false}) {
      const TreeLstmConfig cfg{.vocab = tb.vocab.size(), .dim = 6, .hidden = kHidden, .dropout = 0.0,
                               .init_scale = 0.5, .cell = cell};
      ParameterSet ps{DType::f32, 3};
      add_tree_lstm_params(ps, cfg);
      TreeLstmModel m(ps, cfg);
      Executor ex(m.program, ps, lend ? ExecutorOptions{} : ExecutorOptions{}.without(Optimisation::lend_forward_arenas));
      ex.forward(GraphBatch::of(tb.train), Mode::train);
      ps.zero_grad();
      ex.backward(m.loss);
      ex.backward(m.loss, 0.5);
      grads.emplace_back();
      for (Parameter* p : ps.all()) grads.back().push_back(p->grad.clone());
    }
    for (size_t k = 0; k < grads[0].size(); ++k)
      EXPECT_EQ(test::relative_error(grads[0][k], grads[1][k]), 0.0) << "parameter " << k;
  }
}

TEST(LentArenas, HoldLessMemoryByAtLeastTheGateGradientsRows) {
  const Treebank tb = synthetic_treebank(29, 12, 0, 0);
  const GraphBatch batch = GraphBatch::of(tb.train);
  for (TreeLstmCell cell : {TreeLstmCell::tai, TreeLstmCell::dynet}) {
    SCOPED_TRACE(tree_lstm_cell_name(cell));
    const int64_t gates = cell == TreeLstmCell::tai ? 5 : 3;
    const Trained on = train(cell, {tb.train}, tb.vocab.size(), true);
    const Trained off = train(cell, {tb.train}, tb.vocab.size(), false);
    ASSERT_LT(on.held, off.held);
    EXPECT_GE(off.held - on.held, static_cast<size_t>(batch.num_vertices() * gates * kHidden) * sizeof(float))
        << "held " << on.held << " bytes with lent arenas, " << off.held << " without";
  }
}

}  // namespace
}  // namespace sylva::examples
