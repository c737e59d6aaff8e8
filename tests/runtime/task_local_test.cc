// Task-local values (Optimisation::task_local_values): a value that only
// ops of its own task read lives in one block the size of the largest task
// that writes it.
// The same losses and gradients, bit for bit, over steps whose batches grow
// and shrink (the block is reused by every task of every step); and less
// memory held, by at least the rows such a value no longer keeps.
#include <gtest/gtest.h>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int64_t kHidden = 16;
constexpr int32_t kVocab = 7;

struct Steps {
  std::vector<double> losses;
  std::vector<Tensor> grads;  // after the last step, per parameter
  size_t held = 0;            // Executor::held_bytes() after the last step
};

// test::ChainNet: its recurrent product gather(0)·U is task-local.
Steps run(const std::vector<std::vector<InputGraph>>& batches, bool task_local) {
  ParameterSet ps{DType::f32, 2};
  test::ChainNet m(ps, kVocab, kHidden);
  // Without lent arenas: else, with task-local values off, the product
  // (dead after F's loop) would lend its arena to ∂F and hide the saving.
  Executor ex(m.program, ps, test::on_test_device(test::toggled(ExecutorOptions{}.without(Optimisation::lend_forward_arenas), Optimisation::task_local_values, task_local)));
  Steps s;
  for (const std::vector<InputGraph>& b : batches) {
    ex.forward(GraphBatch::of(b), Mode::train);
    s.losses.push_back(ex.scalar(m.loss));
    ps.zero_grad();
    ex.backward(m.loss);
  }
  for (Parameter* prm : ps.all()) s.grads.push_back(prm->grad.clone());
  s.held = ex.held_bytes();
  return s;
}

TEST(TaskLocalValues, SameBitsOverBatchesThatGrowAndShrink) {
  std::mt19937_64 rng(17);
  std::vector<std::vector<InputGraph>> batches;
  for (int n : {3, 9, 1, 6}) {  // chains of random lengths: tasks of every size
    std::vector<InputGraph> b;
    for (int i = 0; i < n; ++i)
      b.push_back(test::id_chains(1, static_cast<int32_t>(1 + rng() % 12), kVocab)[0]);
    batches.push_back(std::move(b));
  }
  const Steps on = run(batches, true), off = run(batches, false);
  ASSERT_EQ(on.losses.size(), off.losses.size());
  for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
  for (size_t k = 0; k < on.grads.size(); ++k)
    EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << "parameter " << k;
}

TEST(TaskLocalValues, HoldLessMemoryByAtLeastTheRowsTheProductNoLongerKeeps) {
  // 8 chains of 50: 400 rows in tasks of at most 8 rows. The product
  // gather(0)·U alone held 400 rows of kHidden floats; it now holds 8.
  const std::vector<std::vector<InputGraph>> batch{test::id_chains(8, 50, kVocab)};
  const Steps on = run(batch, true), off = run(batch, false);
  ASSERT_LT(on.held, off.held);
  EXPECT_GE(off.held - on.held, static_cast<size_t>((400 - 8) * kHidden) * sizeof(float))
      << "held " << on.held << " bytes with task-local values, " << off.held << " without";
}

TEST(TaskLocalValues, HoldTheRowsOfTheLargestTaskThatWritesThem) {
  // One chain of 20, then the same with 8 chains of one vertex beside it:
  // the first task grows from 1 row to 9, every other task stays 1 row.
  // In that first task the product gather(0)·U is known zero (no child)
  // and stays unwritten, and ∂F's input gradient dG·Uᵀ is not needed: the
  // task-local blocks keep 1 row, while every value that keeps all rows
  // grows by 8. Sized by the largest task of the schedule they would grow
  // by 8 rows too.
  const std::vector<InputGraph> one = test::id_chains(1, 20, kVocab);
  std::vector<InputGraph> more = one;
  for (const InputGraph& g : test::id_chains(8, 1, kVocab)) more.push_back(g);
  const size_t on_one = run({one}, true).held, on_more = run({more}, true).held;
  const size_t off_one = run({one}, false).held, off_more = run({more}, false).held;
  ASSERT_GT(off_more, off_one);
  ASSERT_GE(on_more, on_one);
  EXPECT_GE((off_more - off_one) - (on_more - on_one), static_cast<size_t>(8 * kHidden) * sizeof(float))
      << "task-local values grew with a first task whose rows never write them (held bytes: " << on_one << " -> "
      << on_more << " with task-local values, " << off_one << " -> " << off_more << " without)";
}

}  // namespace
}  // namespace sylva
