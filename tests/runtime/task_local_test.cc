// Task-local values (ExecutorOptions::task_local_values): a value that only
// ops of its own task read lives in one block the size of the largest task.
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

// A chain cell: x·W is made before the loop, the recurrent product m =
// gather(0)·U is read only by the add of its own task (task-local), and
// h is scattered and pushed.
struct ChainModel {
  ChainModel() : f("chain", kHidden, DType::f32) {
    ps.add("E", {7, kHidden}, Init::uniform(-0.5, 0.5));
    ps.add("W", {kHidden, kHidden}, Init::uniform(-0.5, 0.5));
    ps.add("U", {kHidden, kHidden}, Init::uniform(-0.5, 0.5));
    Symbol m = matmul(f.gather(0), f.param(ps["U"]));
    Symbol h = tanh(matmul(f.pull(kHidden), f.param(ps["W"])) + m);
    f.scatter(h);
    f.push(h);
    loss = sum(p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x"))));
  }
  ParameterSet ps{DType::f32, 2};
  VertexFunction f;
  Program p{DType::f32};
  Symbol loss;
};

std::vector<InputGraph> chains(std::mt19937_64& rng, int n, int32_t max_length) {
  std::vector<InputGraph> out;
  for (int i = 0; i < n; ++i) {
    const auto length = static_cast<int32_t>(1 + rng() % static_cast<uint64_t>(max_length));
    out.push_back(InputGraph::chain(length, "chain " + std::to_string(i)));
    std::vector<int32_t> ids(static_cast<size_t>(length));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 7);
    out.back().set_ids("x", std::move(ids));
  }
  return out;
}

struct Steps {
  std::vector<double> losses;
  std::vector<Tensor> grads;  // after the last step, per parameter
  size_t held = 0;            // Executor::held_bytes() after the last step
};

Steps run(ChainModel& m, const std::vector<std::vector<InputGraph>>& batches, bool task_local) {
  Executor ex(m.p, m.ps, test::on_test_device({.task_local_values = task_local}));
  Steps s;
  for (const std::vector<InputGraph>& b : batches) {
    ex.forward(GraphBatch::of(b), Mode::train);
    s.losses.push_back(ex.scalar(m.loss));
    m.ps.zero_grad();
    ex.backward(m.loss);
  }
  for (Parameter* prm : m.ps.all()) s.grads.push_back(prm->grad.clone());
  s.held = ex.held_bytes();
  return s;
}

TEST(TaskLocalValues, SameBitsOverBatchesThatGrowAndShrink) {
  std::mt19937_64 rng(17);
  std::vector<std::vector<InputGraph>> batches;
  for (int n : {3, 9, 1, 6}) batches.push_back(chains(rng, n, 12));
  ChainModel m;
  const Steps on = run(m, batches, true), off = run(m, batches, false);
  ASSERT_EQ(on.losses.size(), off.losses.size());
  for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
  for (size_t k = 0; k < on.grads.size(); ++k)
    EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << m.ps.all()[k]->name;
}

TEST(TaskLocalValues, HoldLessMemoryByAtLeastTheRowsTheProductNoLongerKeeps) {
  // 8 chains of 50: 400 rows in tasks of at most 8 rows. The product m
  // alone held 400 rows of kHidden floats; it now holds 8.
  std::vector<InputGraph> graphs;
  for (int i = 0; i < 8; ++i) {
    graphs.push_back(InputGraph::chain(50, "chain " + std::to_string(i)));
    graphs.back().set_ids("x", std::vector<int32_t>(50, i % 7));
  }
  const std::vector<std::vector<InputGraph>> batch{std::move(graphs)};
  ChainModel m;
  const Steps on = run(m, batch, true), off = run(m, batch, false);
  ASSERT_LT(on.held, off.held);
  EXPECT_GE(off.held - on.held, static_cast<size_t>((400 - 8) * kHidden) * sizeof(float))
      << "held " << on.held << " bytes with task-local values, " << off.held << " without";
}

}  // namespace
}  // namespace sylva
