// Executor::set_gradient_hook: when backward() says each gradient is final.
// The data-parallel Trainer starts a bucket's allreduce from it, so a
// parameter named before its last write would be summed half-done.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sylva/runtime/executor.h"
#include "sylva/train/generators.h"
#include "support/test_util.h"

namespace sylva {
namespace {

std::vector<InputGraph> trees(int n, uint64_t seed) { return test::random_id_trees(n, seed, 20, 3); }

struct HookRecord {
  std::vector<std::string> names;  // in the order they were named
  int calls = 0;
  int calls_before[2] = {0, 0};    // calls when "Ws" and "W" were named
};

TEST(GradientHook, NamesEachWrittenParameterOnceAfterItsLastWrite) {
  ParameterSet ps(DType::f64);
  test::DropoutTreeNet net(ps, 20, 0.0);
  ps.add("unused", {3, 3}, Init::glorot());
  const std::vector<InputGraph> data = trees(6, 3);
  const GraphBatch batch = GraphBatch::of(data);
  Executor ex(net.program, ps, {});
  const plan::ProgramGradPlan& plan = ex.gradient_plan(net.loss);
  EXPECT_EQ(plan.sparse_params, (std::set<std::string>{"E"}));

  HookRecord rec;
  ex.set_gradient_hook([&](std::span<const std::string> final) {
    ++rec.calls;
    for (const std::string& name : final) {
      rec.names.push_back(name);
      if (name == "Ws") rec.calls_before[0] = rec.calls;
      if (name == "W") rec.calls_before[1] = rec.calls;
    }
  });
  ex.forward(batch, Mode::train);
  ex.backward(net.loss);
  std::vector<std::string> sorted = rec.names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"E", "W", "Ws"})) << "each written parameter once; 'unused' never";
  // The classifier's gradient needs no vertex function: it is final before
  // the vertex function's gradient loop runs, and the loop calls the hook
  // once per task (BFS level) on top of once per program op.
  EXPECT_LT(rec.calls_before[0], rec.calls_before[1]) << plan.to_text();
  EXPECT_GE(rec.calls, static_cast<int>(plan.order.size()) / 2 + 2);

  // Nothing moved: the hook did not change the gradients.
  const test::LossAndGrads with_hook{ex.scalar(net.loss), {}};
  ex.set_gradient_hook(nullptr);
  const int calls = rec.calls;
  ex.forward(batch, Mode::train);
  ex.backward(net.loss);
  EXPECT_EQ(rec.calls, calls) << "a removed hook is not called";
  EXPECT_EQ(ex.scalar(net.loss), with_hook.loss);
}

TEST(GradientHook, AThrowEndsTheBackward) {
  ParameterSet ps(DType::f64);
  test::DropoutTreeNet net(ps, 20, 0.0);
  const std::vector<InputGraph> data = trees(3, 4);
  Executor ex(net.program, ps, {});
  ex.set_gradient_hook([](std::span<const std::string> final) {
    for (const std::string& name : final)
      if (name == "Ws") SYLVA_THROW("stop at Ws");
  });
  ex.forward(GraphBatch::of(data), Mode::train);
  EXPECT_CONTAINS(test::error_of([&] { ex.backward(net.loss); }), "stop at Ws");
}

}  // namespace
}  // namespace sylva
