// The gemm-floor bound of bench_suite: the GEMMs recorded from Sylva's
// executor are the model's GEMMs (their flops add up to the count worked
// out by hand for Tree-FC), and the strategy replays only minibatches it
// was shown.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gemm_replay.h"
#include "strategy.h"
#include "tree_fc_model.h"

namespace sylva::bench {
namespace {

// Tree-FC's GEMM flops in one training step over `trees` complete binary
// trees of `leaves` leaves, worked out from the model: every internal
// vertex multiplies [h_l; h_r] (2h) by W (2h x h) forward, back to its
// children (dX) and into dW; leaves have no children, so none (skip_zero_work);
// the classifier runs on the roots alone (h x classes, three GEMMs).
int64_t tree_fc_gemm_flops(int64_t trees, int64_t leaves, int64_t h, int64_t classes) {
  const int64_t internal = trees * (leaves - 1), roots = trees;
  return 3 * (2 * internal * 2 * h * h) + 3 * (2 * roots * h * classes);
}

class GemmFloor : public ::testing::TestWithParam<DType> {};

TEST_P(GemmFloor, RecordedGemmsAreTheModelsFlops) {
  const examples::TreeFcConfig cfg{.vocab = 50, .hidden = 8, .classes = 3, .dtype = GetParam()};
  ParameterSet ps(cfg.dtype, 1);
  examples::add_tree_fc_params(ps, cfg);
  examples::TreeFcModel model(ps, cfg);
  Executor ex(model.program, ps, {.threads = 1});
  std::vector<RecordedGemm> gemms;
  int64_t event_flops = 0;
  ex.set_observer([&](const OpEvent& e) {
    if (std::optional<RecordedGemm> g = recorded_gemm(e)) {
      EXPECT_EQ(g->flops(), e.flops) << ir::op_name(e.node.op) << " in " << e.graph.name();
      event_flops += e.flops;
      gemms.push_back(*g);
    }
  });
  std::mt19937_64 rng(5);
  for (const int64_t trees : {1, 3}) {
    for (const int32_t leaves : {2, 8}) {
      gemms.clear();
      event_flops = 0;
      const std::vector<InputGraph> batch = examples::tree_fc_samples(rng, trees, leaves, cfg);
      ex.forward(GraphBatch::of(batch), Mode::train);
      ps.zero_grad();
      ex.backward(model.loss);
      int64_t flops = 0;
      for (const RecordedGemm& g : gemms) {
        flops += g.flops();
        const int64_t inner_a = g.trans_a ? g.a_rows : g.a_cols;
        const int64_t inner_b = g.trans_b ? g.b_cols : g.b_rows;
        EXPECT_EQ(inner_a, inner_b);
        EXPECT_GT(g.out_rows * g.out_cols, 0);
      }
      EXPECT_EQ(flops, event_flops);
      EXPECT_EQ(flops, tree_fc_gemm_flops(trees, leaves, cfg.hidden, cfg.classes)) << trees << " trees of " << leaves;
      // The accumulated ones are the parameter gradients dW and dWs (one each: lazy batching).
      EXPECT_EQ(std::count_if(gemms.begin(), gemms.end(), [](const RecordedGemm& g) { return g.accumulate; }), 2);
      GemmReplay replay(ex.backend());
      replay.prepare(gemms, cfg.dtype);
      replay.run(gemms);  // runs on its own buffers (ASan checks their sizes)
    }
  }
}

TEST_P(GemmFloor, ReplaysOnlyPreparedMinibatches) {
  const ModelConfig cfg{.workload = Workload::tree_fc, .vocab = 40, .hidden = 6, .classes = 3, .dtype = GetParam()};
  ParameterSet ps(cfg.dtype, 2);
  add_params(ps, cfg);
  std::mt19937_64 rng(7);
  const std::vector<InputGraph> samples =
      examples::tree_fc_samples(rng, 5, 4, {.vocab = cfg.vocab, .hidden = cfg.hidden, .classes = cfg.classes});
  auto floor = make_builtin_strategy(kGemmFloor, cfg, ps, {.executor = {.threads = 1}, .optimizer = "adam"});
  EXPECT_EQ(floor->name(), kGemmFloor);
  EXPECT_THROW(floor->step(std::span(samples).first(2), true), Error);  // not prepared
  floor->prepare(samples, 2, true);  // minibatches at samples 0 and 2; the fifth sample is never one
  for (size_t at : {0, 2}) {
    const StepStats s = floor->step(std::span(samples).subspan(at, 2), true);
    EXPECT_TRUE(std::isnan(s.loss));  // a bound, not a model: it computes no loss
    EXPECT_EQ(s.kernels, 2 * 2 + 1 + 3) << "forward and dX on both internal levels, one dW, three for the classifier";
    floor->update();
  }
  EXPECT_THROW(floor->step(std::span(samples).subspan(1, 2), true), Error);
  EXPECT_THROW(floor->step(std::span(samples).subspan(4, 1), true), Error);
  const std::vector<std::string> names = builtin_strategy_names(Workload::tree_fc);
  EXPECT_EQ(std::count(names.begin(), names.end(), kGemmFloor), 0) << "not a system: in no default list";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmFloor, ::testing::Values(DType::f32, DType::f64),
                         [](const auto& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace sylva::bench
