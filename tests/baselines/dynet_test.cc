// The real-DyNet baselines compute Sylva's loss and gradients (in float32,
// DyNet's precision) on Tree-LSTM (both cells), Tree-FC and the LSTM
// language models, and train like Sylva: a few optimiser steps of each
// system from the same parameters give the same losses. Built and run only
// where SYLVA_DYNET_DIR names a DyNet build; skipped with the reason
// otherwise.
#include <gtest/gtest.h>

#ifdef SYLVA_HAVE_DYNET

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dynet_strategies.h"
#include "labelled_samples.h"
#include "lstm_lm.h"
#include "support/test_util.h"
#include "tree_fc_model.h"
#include "tree_lstm_model.h"

namespace sylva::bench {
namespace {

constexpr int32_t kVocab = 13;
constexpr int32_t kClasses = 3;

std::vector<InputGraph> trees(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return testing_samples::labelled_trees(rng, kVocab, kClasses);
}

std::vector<InputGraph> sentences(uint64_t seed, const std::vector<int32_t>& lengths) {
  std::mt19937_64 rng(seed);
  return testing_samples::labelled_sentences(rng, lengths, kVocab);
}

std::unique_ptr<ParameterSet> params(const ModelConfig& cfg) {
  auto ps = std::make_unique<ParameterSet>(DType::f32, 1);
  add_params(*ps, cfg);
  std::mt19937_64 rng(7);
  testing_samples::randomize(*ps, rng);
  return ps;
}

// Sylva's loss and gradients (the example model, Serial, f32), then each
// DyNet strategy's on the same parameters: equal to float rounding. Two
// training steps, so a strategy that accumulated gradients would fail; an
// evaluation step gives the same loss.
void expect_dynet_equals_sylva(const ModelConfig& cfg, const Program& program, ParameterSet& ps, Symbol loss,
                               const std::vector<InputGraph>& batch) {
  const test::LossAndGrads want =
      test::loss_and_grads(program, ps, GraphBatch::of(batch), loss, BatchingPolicy::Serial);
  ASSERT_GT(std::abs(want.loss), 0.0);
  for (const std::string& name : dynet_strategy_names(cfg.workload)) {
    SCOPED_TRACE(name);
    std::unique_ptr<DynetStrategy> s = make_dynet_strategy(name, cfg, ps, {});
    EXPECT_EQ(s->name(), name);
    for (int run = 0; run < 2; ++run) {
      const StepStats st = s->step(batch, true);
      EXPECT_NEAR(st.loss, want.loss, 1e-5 * std::abs(want.loss));
      EXPECT_GE(st.build_s, 0.0);
      EXPECT_GT(st.compute_s, 0.0);
      ps.zero_grad();
      s->copy_gradients(ps);
      const std::vector<Parameter*> all = ps.all();
      ASSERT_EQ(all.size(), want.grads.size());
      for (size_t k = 0; k < all.size(); ++k)
        EXPECT_LE(test::relative_error(all[k]->grad, want.grads[k]), 1e-4) << all[k]->name;
    }
    EXPECT_NEAR(s->step(batch, false).loss, want.loss, 1e-5 * std::abs(want.loss));
  }
}

// Sylva and DyNet each train their own copy of the same parameters with the
// same optimiser for a few steps: the losses stay equal to float rounding
// (DyNet's Adam puts ε after the bias correction, Sylva's before: a
// difference of order ε).
void expect_same_training(const ModelConfig& cfg, const std::vector<InputGraph>& batch, const std::string& optimizer,
                          double lr) {
  SCOPED_TRACE(optimizer);
  const StrategyOptions o{.optimizer = optimizer, .lr = lr};
  std::unique_ptr<ParameterSet> sylva_ps = params(cfg), dynet_ps = params(cfg);
  std::unique_ptr<Strategy> sylva = make_builtin_strategy("sylva", cfg, *sylva_ps, o);
  std::unique_ptr<DynetStrategy> dynet = make_dynet_strategy("dynet-autobatch", cfg, *dynet_ps, o);
  double first = 0, last = 0;
  for (int step = 0; step < 4; ++step) {
    const double want = sylva->step(batch, true).loss, got = dynet->step(batch, true).loss;
    EXPECT_NEAR(got, want, 1e-4 * std::abs(want)) << "step " << step;
    sylva->update();
    dynet->update();
    (step == 0 ? first : last) = want;
  }
  EXPECT_LT(last, first);  // both trained: the loss on the batch went down
}

ModelConfig tree_lstm_config(examples::TreeLstmCell cell) {
  return {.workload = Workload::tree_lstm, .vocab = kVocab, .embed = 5, .hidden = 4, .classes = kClasses,
          .cell = cell};
}

TEST(DynetBaselines, TreeLstmBothCellsMatchSylva) {
  for (auto cell : {examples::TreeLstmCell::tai, examples::TreeLstmCell::dynet}) {
    SCOPED_TRACE(examples::tree_lstm_cell_name(cell));
    const ModelConfig cfg = tree_lstm_config(cell);
    std::unique_ptr<ParameterSet> ps = params(cfg);
    examples::TreeLstmModel m(*ps, {.vocab = kVocab, .dim = 5, .hidden = 4, .classes = kClasses, .dropout = 0.0,
                                    .cell = cell});
    expect_dynet_equals_sylva(cfg, m.program, *ps, m.loss, trees(3));
  }
}

TEST(DynetBaselines, TreeFcMatchesSylva) {
  const ModelConfig cfg{.workload = Workload::tree_fc, .vocab = kVocab, .hidden = 6, .classes = kClasses};
  std::unique_ptr<ParameterSet> ps = params(cfg);
  examples::TreeFcModel m(*ps, {.vocab = kVocab, .hidden = 6, .classes = kClasses});
  expect_dynet_equals_sylva(cfg, m.program, *ps, m.loss, trees(4));
}

TEST(DynetBaselines, LstmLanguageModelsMatchSylva) {
  for (int64_t layers : {1, 2}) {
    SCOPED_TRACE(layers);
    const ModelConfig cfg{.workload = Workload::var_lstm, .vocab = kVocab, .embed = 5, .hidden = 4,
                          .classes = kVocab, .layers = layers};
    std::unique_ptr<ParameterSet> ps = params(cfg);
    examples::LstmLm m(*ps, {.vocab = kVocab, .embed = 5, .hidden = 4, .layers = layers});
    expect_dynet_equals_sylva(cfg, m.program, *ps, m.loss, sentences(5, {3, 7, 1, 7, 5}));
  }
}

TEST(DynetBaselines, TrainsLikeSylva) {
  expect_same_training(tree_lstm_config(examples::TreeLstmCell::dynet), trees(6), "adam", 0.01);
  expect_same_training(tree_lstm_config(examples::TreeLstmCell::tai), trees(6), "adagrad", 0.05);
  expect_same_training(tree_lstm_config(examples::TreeLstmCell::tai), trees(6), "sgd", 0.1);
}

TEST(DynetBaselines, Errors) {
  ModelConfig cfg = tree_lstm_config(examples::TreeLstmCell::tai);
  std::unique_ptr<ParameterSet> ps = params(cfg);
  EXPECT_CONTAINS(test::error_of([&] { make_dynet_strategy("dynet-fast", cfg, *ps, {}); }),
                  "unknown strategy 'dynet-fast'");
  EXPECT_CONTAINS(test::error_of([&] { make_dynet_strategy("dynet", cfg, *ps, {.executor = {.threads = 2}}); }),
                  "one thread");
  EXPECT_CONTAINS(test::error_of([&] { make_dynet_strategy("dynet", cfg, *ps, {.optimizer = "rmsprop"}); }),
                  "unknown optimizer 'rmsprop'");
  std::unique_ptr<DynetStrategy> s = make_dynet_strategy("dynet", cfg, *ps, {});
  EXPECT_CONTAINS(test::error_of([&] { s->update(); }), "without an optimizer");
  ModelConfig f64 = cfg;
  f64.dtype = DType::f64;
  ParameterSet ps64(DType::f64, 1);
  add_params(ps64, f64);
  EXPECT_CONTAINS(test::error_of([&] { make_dynet_strategy("dynet", f64, ps64, {}); }), "f32 only");
  EXPECT_CONTAINS(test::error_of([&] { init_dynet(64, 99); }), "initialises once per process");
}

}  // namespace
}  // namespace sylva::bench

#else

TEST(DynetBaselines, Skipped) {
  GTEST_SKIP() << "built without DyNet (bash ../shared/peers/build_dynet.sh, then configure with "
                  "-DSYLVA_DYNET_DIR=<its build directory>)";
}

#endif
