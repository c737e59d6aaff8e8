// The libtorch baselines compute Sylva's loss and gradients: every torch
// strategy of Tree-LSTM, Tree-FC and the LSTM language models against the
// example models run with BatchingPolicy::Serial, in float64.
#include <gtest/gtest.h>

#ifdef SYLVA_HAVE_TORCH

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "labelled_samples.h"
#include "lstm_lm.h"
#include "support/test_util.h"
#include "torch_strategies.h"
#include "tree_fc_model.h"
#include "tree_lstm_model.h"

namespace sylva::bench {
namespace {

constexpr int32_t kVocab = 13;
constexpr int32_t kClasses = 3;

using testing_samples::randomize;

std::vector<InputGraph> trees(std::mt19937_64& rng) { return testing_samples::labelled_trees(rng, kVocab, kClasses); }

std::vector<InputGraph> sentences(std::mt19937_64& rng, std::vector<int32_t> lengths) {
  return testing_samples::labelled_sentences(rng, lengths, kVocab);
}

// Sylva's loss and gradients (the example model over add_params'
// parameters), then each torch strategy's: equal to rounding. Two training
// steps, so a strategy that accumulated gradients would fail; an evaluation
// step gives the same loss.
void expect_torch_equals_sylva(const ModelConfig& cfg, ParameterSet& ps, const Program& program, Symbol loss,
                               const std::vector<InputGraph>& batch) {
  const test::LossAndGrads want =
      test::loss_and_grads(program, ps, GraphBatch::of(batch), loss, BatchingPolicy::Serial);
  ASSERT_GT(std::abs(want.loss), 0.0);
  for (const std::string& name : torch_strategy_names(cfg.workload)) {
    SCOPED_TRACE(name);
    std::unique_ptr<Strategy> s = make_torch_strategy(name, cfg, ps, 1);
    EXPECT_EQ(s->name(), name);
    for (int run = 0; run < 2; ++run) {
      ps.zero_grad();
      const StepStats st = s->step(batch, true);
      EXPECT_NEAR(st.loss, want.loss, 1e-10 * std::abs(want.loss));
      EXPECT_GE(st.build_s, 0.0);
      EXPECT_GT(st.compute_s, 0.0);
      const std::vector<Parameter*> params = ps.all();
      ASSERT_EQ(params.size(), want.grads.size());
      for (size_t k = 0; k < params.size(); ++k)
        EXPECT_LE(test::relative_error(params[k]->grad, want.grads[k]), 1e-10) << params[k]->name;
    }
    EXPECT_NEAR(s->step(batch, false).loss, want.loss, 1e-10 * std::abs(want.loss));
  }
}

TEST(LibtorchBaselines, TreeLstmMatchesSylva) {
  std::mt19937_64 rng(1);
  const ModelConfig cfg{.workload = Workload::tree_lstm, .vocab = kVocab, .embed = 5, .hidden = 4,
                        .classes = kClasses, .dtype = DType::f64};
  const examples::TreeLstmConfig mc{.vocab = cfg.vocab, .dim = cfg.embed, .hidden = cfg.hidden,
                                    .classes = cfg.classes, .dropout = 0.0, .dtype = DType::f64};
  ParameterSet ps(DType::f64, 3);
  add_params(ps, cfg);
  randomize(ps, rng);
  examples::TreeLstmModel m(ps, mc);
  expect_torch_equals_sylva(cfg, ps, m.program, m.loss, trees(rng));
}

TEST(LibtorchBaselines, TreeFcMatchesSylva) {
  std::mt19937_64 rng(2);
  const ModelConfig cfg{.workload = Workload::tree_fc, .vocab = kVocab, .embed = 4, .hidden = 4,
                        .classes = kClasses, .dtype = DType::f64};
  const examples::TreeFcConfig mc{.vocab = cfg.vocab, .hidden = cfg.hidden, .classes = cfg.classes,
                                  .dtype = DType::f64};
  ParameterSet ps(DType::f64, 4);
  add_params(ps, cfg);
  randomize(ps, rng);
  examples::TreeFcModel m(ps, mc);
  expect_torch_equals_sylva(cfg, ps, m.program, m.loss, trees(rng));
}

TEST(LibtorchBaselines, VarLstmMatchesSylva) {
  std::mt19937_64 rng(3);
  const ModelConfig cfg{.workload = Workload::var_lstm, .vocab = kVocab, .embed = 5, .hidden = 4, .layers = 2,
                        .dtype = DType::f64};
  const examples::LstmLmConfig mc{.vocab = cfg.vocab, .embed = cfg.embed, .hidden = cfg.hidden,
                                  .layers = cfg.layers, .dtype = DType::f64};
  ParameterSet ps(DType::f64, 5);
  add_params(ps, cfg);
  examples::LstmLm m(ps, mc);
  // Unsorted lengths, ties and a one-token chain exercise the packing order.
  expect_torch_equals_sylva(cfg, ps, m.program, m.loss, sentences(rng, {3, 7, 1, 7, 5}));
}

TEST(LibtorchBaselines, FixedLstmMatchesSylva) {
  std::mt19937_64 rng(4);
  const ModelConfig cfg{.workload = Workload::fixed_lstm, .vocab = kVocab, .embed = 3, .hidden = 5, .layers = 1,
                        .dtype = DType::f64};
  const examples::LstmLmConfig mc{.vocab = cfg.vocab, .embed = cfg.embed, .hidden = cfg.hidden,
                                  .layers = cfg.layers, .dtype = DType::f64};
  ParameterSet ps(DType::f64, 6);
  add_params(ps, cfg);
  examples::LstmLm m(ps, mc);
  expect_torch_equals_sylva(cfg, ps, m.program, m.loss, sentences(rng, {6, 6, 6}));
}

TEST(LibtorchBaselines, NamesAndErrors) {
  const std::vector<std::string> trees_names = {"libtorch-recursive", "libtorch-levels"};
  EXPECT_EQ(torch_strategy_names(Workload::tree_lstm), trees_names);
  EXPECT_EQ(torch_strategy_names(Workload::tree_fc), trees_names);
  EXPECT_EQ(torch_strategy_names(Workload::var_lstm), std::vector<std::string>{"libtorch-packed"});
  EXPECT_EQ(torch_strategy_names(Workload::fixed_lstm), std::vector<std::string>{"libtorch-packed"});
  const ModelConfig cfg{.workload = Workload::tree_lstm, .vocab = kVocab, .embed = 5, .hidden = 4,
                        .classes = kClasses, .dtype = DType::f64};
  ParameterSet ps(DType::f64, 7);
  add_params(ps, cfg);
  EXPECT_CONTAINS(test::error_of([&] { make_torch_strategy("libtorch-packed", cfg, ps, 1); }),
                  "no strategy 'libtorch-packed' for workload tree-lstm");
  // A chain fed to the LSTM must be one: a tree is rejected by name.
  const ModelConfig lm{.workload = Workload::var_lstm, .vocab = kVocab, .embed = 5, .hidden = 4, .layers = 1,
                       .dtype = DType::f64};
  ParameterSet lps(DType::f64, 8);
  add_params(lps, lm);
  std::unique_ptr<Strategy> s = make_torch_strategy("libtorch-packed", lm, lps, 1);
  std::mt19937_64 rng(9);
  std::vector<InputGraph> not_chains = trees(rng);
  EXPECT_CONTAINS(test::error_of([&] { s->step(not_chains, true); }), "is not a chain");
}

}  // namespace
}  // namespace sylva::bench

#else

TEST(LibtorchBaselines, Skipped) {
  GTEST_SKIP() << "built without libtorch (apt-get install libtorch-dev and reconfigure)";
}

#endif
