// The stacked LSTM language model: Bfs == Serial in loss and every
// gradient on chains of mixed lengths (with dropout, 2 and 3 layers), a
// whole-model finite-difference check, and learning a predictable corpus
// through the shared training loop.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lm_training.h"
#include "resume_check.h"
#include "lstm_lm.h"
#include "ptb.h"
#include "support/test_util.h"

namespace sylva::examples {
namespace {

// Chains of lengths in [1, max_len] (the runtime's generators) with
// random words and labels (label -1 on about a tenth of the vertices).
std::vector<InputGraph> random_chains(uint64_t seed, int n, int32_t max_len, int32_t vocab) {
  std::mt19937_64 rng(seed);
  std::vector<InputGraph> out = chains(random_lengths(rng, n, 1, max_len), "chain");
  std::uniform_int_distribution<int32_t> word(0, vocab - 1);
  std::bernoulli_distribution unlabelled(0.1);
  for (InputGraph& g : out) {
    std::vector<int32_t> words(static_cast<size_t>(g.num_vertices())), labels(words.size());
    for (size_t v = 0; v < words.size(); ++v) {
      words[v] = word(rng);
      labels[v] = unlabelled(rng) ? -1 : word(rng);
    }
    g.set_ids("words", std::move(words));
    g.set_ids("labels", std::move(labels));
  }
  return out;
}

LstmLmConfig tiny(int64_t layers, double dropout) {
  return {.vocab = 7, .embed = 4, .hidden = 5, .layers = layers, .dropout = dropout, .init_scale = 0.5,
          .dtype = DType::f64};
}

class LstmLmInvariance : public ::testing::TestWithParam<int64_t> {};

TEST_P(LstmLmInvariance, BfsEqualsSerialInLossAndEveryGradient) {
  const LstmLmConfig cfg = tiny(GetParam(), 0.3);
  ParameterSet ps(DType::f64, 3);
  add_lstm_lm_params(ps, cfg);
  LstmLm m(ps, cfg);
  std::vector<InputGraph> chains = random_chains(17, 25, 12, 7);
  GraphBatch b = GraphBatch::of(chains);
  const test::LossAndGrads serial = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Serial, 5);
  const test::LossAndGrads bfs = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Bfs, 5);
  EXPECT_GT(serial.loss, 0.0);
  EXPECT_NEAR(serial.loss, bfs.loss, 1e-10 * std::abs(serial.loss));
  const std::vector<Parameter*> params = ps.all();
  ASSERT_EQ(params.size(), static_cast<size_t>(3 + 3 * GetParam()));
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_LE(test::relative_error(serial.grads[k], bfs.grads[k]), 1e-10) << params[k]->name;
}

INSTANTIATE_TEST_SUITE_P(Layers, LstmLmInvariance, ::testing::Values(2, 3));

TEST(LstmLm, WholeModelGradientMatchesFiniteDifferences) {
  const LstmLmConfig cfg = tiny(2, 0.0);
  ParameterSet ps(DType::f64, 8);
  add_lstm_lm_params(ps, cfg);
  LstmLm m(ps, cfg);
  std::vector<InputGraph> chains = random_chains(4, 6, 7, 7);
  GraphBatch b = GraphBatch::of(chains);
  Executor ex(m.program, ps);
  ex.forward(b, Mode::train);
  ps.zero_grad();
  ex.backward(m.loss);
  for (Parameter* p : ps.all()) EXPECT_LE(test::finite_difference_error(ex, b, m.loss, *p, 40), 1e-6) << p->name;
}

TEST(LstmLm, ZarembaLearningRateSchedule) {
  LmTrainOptions o;  // lr 1, halved every epoch after epoch 4
  EXPECT_EQ(lm_learning_rate(o, 1), 1.0);
  EXPECT_EQ(lm_learning_rate(o, 4), 1.0);
  EXPECT_EQ(lm_learning_rate(o, 5), 0.5);
  EXPECT_EQ(lm_learning_rate(o, 13), 1.0 / 512);
}

// Sentences count up from a random start modulo the vocabulary, so every
// word after the first is determined by its predecessor: a model that
// learned the rule approaches perplexity (first-word ppl)^(1/len) ≈ 1.
std::vector<Sentence> counting_corpus(uint64_t seed, int n, int32_t words) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> start(1, words), len(3, 8);
  std::vector<Sentence> out;
  for (int i = 0; i < n; ++i) {
    Sentence s;
    int32_t w = start(rng);
    for (int32_t k = len(rng); k > 0; --k, w = w % words + 1) s.push_back(w);
    s.push_back(0);  // <eos>
    out.push_back(std::move(s));
  }
  return out;
}

// Three epochs straight, or one, saved, then resumed for two: the state
// files after epoch 3 are the same bytes (parameters, optimiser, step,
// shuffling RNG), and so are the perplexities.
TEST(LstmLm, TrainingLoopResumesExactly) {
  const int32_t vocab = 11;
  LmData d;
  d.train = sentence_chains(counting_corpus(1, 120, 10), 0, vocab, "train");
  d.valid = sentence_chains(counting_corpus(2, 20, 10), 0, vocab, "valid");
  d.test = sentence_chains(counting_corpus(3, 20, 10), 0, vocab, "test");
  LmTrainOptions o;
  o.model = {.vocab = vocab, .embed = 8, .hidden = 8, .layers = 2, .dropout = 0.2};
  o.decay_after = 1;  // the learning rate changes every epoch
  const auto [straight, resumed] = check_resume(o, 3, "lm", [&](const LmTrainOptions& x) { return train_lm(d, x, nullptr); });
  ASSERT_EQ(resumed.epochs.size(), 2u);
  EXPECT_EQ(resumed.epochs.back().valid_ppl, straight.epochs.back().valid_ppl);
  EXPECT_EQ(resumed.test_ppl, straight.test_ppl);
  o.resume = testing::TempDir() + "lm_first.safetensors";
  o.epochs = 1;  // nothing left to train
  EXPECT_CONTAINS(test::error_of([&] { train_lm(d, o, nullptr); }), "leaves nothing to train");
}

TEST(LstmLm, TrainingLoopLearnsAPredictableCorpus) {
  const int32_t vocab = 11;  // <eos> = 0 and words 1..10
  LmData d;
  d.train = sentence_chains(counting_corpus(1, 2000, 10), 0, vocab, "train");
  d.valid = sentence_chains(counting_corpus(2, 60, 10), 0, vocab, "valid");
  d.test = sentence_chains(counting_corpus(3, 60, 10), 0, vocab, "test");
  LmTrainOptions o;
  o.model = {.vocab = vocab, .embed = 16, .hidden = 16, .layers = 2};
  o.epochs = 8;
  o.decay_after = 6;
  LmTrainResult r = train_lm(d, o, nullptr);
  ASSERT_EQ(r.epochs.size(), 8u);
  // Uniform guessing gives 11; the first word (10 choices) and the length
  // (6 choices of where <eos> comes) bound what is learnable: ≈ 1.9.
  EXPECT_LT(r.epochs.back().valid_ppl, 3.0);
  EXPECT_LT(r.test_ppl, 3.0);
  EXPECT_LT(r.epochs.back().valid_ppl, r.epochs.front().valid_ppl);
}

}  // namespace
}  // namespace sylva::examples
