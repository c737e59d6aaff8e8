// The Tree-FC example model: the data (labels follow the documented rule),
// the forward pass against a hand-written reference, Bfs == Serial (loss and
// every gradient), gradients against finite differences, and a short
// training run that lowers the loss and generalises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "support/test_util.h"
#include "tree_fc_model.h"

namespace sylva::examples {
namespace {

TreeFcConfig small_config(DType dtype) {
  return {.vocab = 12, .hidden = 5, .classes = 3, .dtype = dtype, .init = 0.5};
}

TEST(TreeFc, SamplesAreCompleteTreesLabelledAtTheRoot) {
  TreeFcConfig cfg = small_config(DType::f64);
  std::mt19937_64 rng(1);
  std::vector<InputGraph> trees = tree_fc_samples(rng, 20, 8, cfg);
  ASSERT_EQ(trees.size(), 20u);
  std::vector<int> root_labels(3, 0);
  for (const InputGraph& g : trees) {
    ASSERT_EQ(g.num_vertices(), 15);
    const auto& words = g.ids("words");
    const auto& labels = g.ids("labels");
    std::vector<int32_t> leaf_words;
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const bool leaf = g.children(v).empty();
      EXPECT_EQ(words[v] >= 0, leaf) << g.source() << " vertex " << v;
      EXPECT_LT(words[v], cfg.vocab);
      if (leaf) leaf_words.push_back(words[v]);
      if (v + 1 < g.num_vertices()) {
        EXPECT_EQ(labels[v], -1);
      }
    }
    ASSERT_EQ(leaf_words.size(), 8u);
    EXPECT_EQ(labels.back(), tree_fc_label(leaf_words, cfg.classes));
    ++root_labels[static_cast<size_t>(labels.back())];
  }
  for (int n : root_labels) EXPECT_GT(n, 0) << "a class never occurs at the root";
  // Majority of w mod classes, ties to the smaller class.
  EXPECT_EQ(tree_fc_label(std::vector<int32_t>{2, 5, 1, 4}, 3), 1);  // classes 2 2 1 1
  EXPECT_EQ(tree_fc_label(std::vector<int32_t>{2, 5, 8, 0}, 3), 2);  // classes 2 2 2 0
  EXPECT_CONTAINS(test::error_of([&] { tree_fc_samples(rng, 2, 6, cfg); }), "power of two");
}

// h = relu([h_l; h_r]·W + x + b) and the root's cross-entropy, computed by
// hand from the parameter values.
TEST(TreeFc, ModelComputesTheDocumentedFunction) {
  TreeFcConfig cfg = small_config(DType::f64);
  ParameterSet ps(DType::f64, 8);
  add_tree_fc_params(ps, cfg);
  for (const char* name : {"b", "bs"})  // nonzero biases, so a dropped bias shows
    for (int64_t i = 0; i < ps[name].value.numel(); ++i) ps[name].value.set(i, 0.1 * static_cast<double>(i + 1));
  TreeFcModel m(ps, cfg);
  std::mt19937_64 rng(3);
  std::vector<InputGraph> trees = tree_fc_samples(rng, 2, 4, cfg);
  GraphBatch batch = GraphBatch::of(trees);
  Executor ex(m.program, ps);
  ex.forward(batch, Mode::train);
  const Tensor& got = ex.value(m.hidden);

  const int64_t h = cfg.hidden, C = cfg.classes;
  const Tensor &E = ps["E"].value, &W = ps["W"].value, &b = ps["b"].value, &Ws = ps["Ws"].value,
               &bs = ps["bs"].value;
  double loss = 0;
  int32_t offset = 0;
  for (const InputGraph& g : trees) {
    const auto& words = g.ids("words");
    std::vector<std::vector<double>> hv(static_cast<size_t>(g.num_vertices()), std::vector<double>(h, 0.0));
    for (int32_t v = 0; v < g.num_vertices(); ++v) {  // post-order: children first
      auto kids = g.children(v);
      for (int64_t j = 0; j < h; ++j) {
        double a = b.at(j) + (words[v] >= 0 ? E.at(words[v] * h + j) : 0.0);
        for (size_t s = 0; s < kids.size(); ++s)
          for (int64_t k = 0; k < h; ++k)
            a += hv[static_cast<size_t>(kids[s])][k] * W.at((static_cast<int64_t>(s) * h + k) * h + j);
        hv[v][j] = std::max(a, 0.0);
        EXPECT_NEAR(got.at((offset + v) * h + j), hv[v][j], 1e-12) << g.source() << " vertex " << v;
      }
    }
    const std::vector<double>& root = hv.back();
    std::vector<double> logits(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      logits[c] = bs.at(c);
      for (int64_t j = 0; j < h; ++j) logits[c] += root[j] * Ws.at(j * C + c);
    }
    double z = 0;
    for (double l : logits) z += std::exp(l);
    loss += std::log(z) - logits[static_cast<size_t>(g.ids("labels").back())];
    offset += g.num_vertices();
  }
  EXPECT_NEAR(ex.scalar(m.loss), loss, 1e-12 * loss);
}

TEST(TreeFc, BfsEqualsSerial) {
  TreeFcConfig cfg = small_config(DType::f64);
  ParameterSet ps(DType::f64, 3);
  add_tree_fc_params(ps, cfg);
  TreeFcModel m(ps, cfg);
  std::mt19937_64 rng(2);
  std::vector<InputGraph> trees = tree_fc_samples(rng, 6, 8, cfg);
  std::vector<InputGraph> more = tree_fc_samples(rng, 3, 4, cfg);  // mixed depths in one batch
  trees.insert(trees.end(), more.begin(), more.end());
  GraphBatch b = GraphBatch::of(trees);
  const test::LossAndGrads serial = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Serial);
  const test::LossAndGrads bfs = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Bfs);
  EXPECT_GT(serial.loss, 0.0);
  EXPECT_NEAR(serial.loss, bfs.loss, 1e-10 * std::abs(serial.loss));
  const std::vector<Parameter*> params = ps.all();
  ASSERT_EQ(serial.grads.size(), params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    double norm = 0;
    for (int64_t i = 0; i < serial.grads[k].numel(); ++i) norm += std::abs(serial.grads[k].at(i));
    EXPECT_GT(norm, 0.0) << params[k]->name << " gets no gradient";
    EXPECT_LE(test::relative_error(serial.grads[k], bfs.grads[k]), 1e-10) << params[k]->name;
  }
}

TEST(TreeFc, GradientsOfWAndEMatchFiniteDifferences) {
  TreeFcConfig cfg = small_config(DType::f64);
  ParameterSet ps(DType::f64, 4);
  add_tree_fc_params(ps, cfg);
  TreeFcModel m(ps, cfg);
  std::mt19937_64 rng(5);
  std::vector<InputGraph> trees = tree_fc_samples(rng, 4, 8, cfg);
  GraphBatch b = GraphBatch::of(trees);
  Executor ex(m.program, ps);
  ex.forward(b, Mode::train);
  ps.zero_grad();
  ex.backward(m.loss);
  for (const char* name : {"W", "E", "b", "Ws"})
    EXPECT_LE(test::finite_difference_error(ex, b, m.loss, ps[name], 40), 1e-6) << name;
}

// The root label (majority leaf class) is learnable: training lowers the
// training loss and beats the majority class on held-out trees.
TEST(TreeFc, TrainingLowersTheLossAndGeneralises) {
  TreeFcConfig cfg{.vocab = 16, .hidden = 16, .classes = 4, .init = 0.3};
  ParameterSet ps(DType::f32, 6);
  add_tree_fc_params(ps, cfg);
  TreeFcModel m(ps, cfg);
  std::mt19937_64 rng(7);
  const std::vector<InputGraph> train = tree_fc_samples(rng, 512, 8, cfg);
  const std::vector<InputGraph> dev = tree_fc_samples(rng, 256, 8, cfg);
  const GraphBatch train_batch = GraphBatch::of(train), dev_batch = GraphBatch::of(dev);
  Trainer trainer(m.program, ps, m.loss, Adam({.lr = 0.01}));
  const double before = trainer.evaluate(train_batch) / static_cast<double>(train.size());
  for (int epoch = 0; epoch < 40; ++epoch)
    for (size_t b = 0; b < train.size(); b += 16) trainer.step(GraphBatch::of(std::span(train).subspan(b, 16)));
  const double after = trainer.evaluate(train_batch) / static_cast<double>(train.size());
  EXPECT_LT(after, 0.3 * before) << "training loss/tree " << before << " -> " << after;

  trainer.evaluate(dev_batch);
  std::vector<int32_t> roots;  // logits has one row per root, in tree order
  for (const InputGraph& g : dev) roots.push_back(g.ids("labels").back());
  const double acc = accuracy(argmax_rows(trainer.executor().value(m.logits)), roots);
  std::vector<int> counts(static_cast<size_t>(cfg.classes), 0);
  for (int32_t r : roots) ++counts[static_cast<size_t>(r)];
  const double majority = *std::max_element(counts.begin(), counts.end()) / static_cast<double>(dev.size());
  EXPECT_GT(acc, majority + 0.2) << "held-out root accuracy " << acc << " vs majority class " << majority;
}

}  // namespace
}  // namespace sylva::examples
