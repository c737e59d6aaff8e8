// The Tree-LSTM example model: whole-program gradient check against finite
// differences, Bfs == Serial on SST-shaped trees, and learning on the
// synthetic treebank (structure-dependent labels).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "resume_check.h"
#include "sentiment_eval.h"
#include "sentiment_training.h"
#include "support/test_util.h"
#include "tree_lstm_model.h"
#include "treebank.h"

namespace sylva::examples {
namespace {

// A small float64 Tree-LSTM over a synthetic treebank.
struct SmallModel {
  Treebank tb;
  TreeLstmConfig cfg;
  ParameterSet ps{DType::f64, 2};
  TreeLstmModel m;
  GraphBatch b;
  SmallModel(uint64_t seed, int trees, double dropout, TreeLstmCell cell = TreeLstmCell::tai)
      : tb(synthetic_treebank(seed, trees, 1, 1)),
        cfg{.vocab = tb.vocab.size(), .dim = 6, .hidden = 4, .dropout = dropout, .init_scale = 0.5,
            .dtype = DType::f64, .cell = cell},
        m((add_tree_lstm_params(ps, cfg), ps), cfg),
        b(GraphBatch::of(tb.train)) {}
};

TEST(TreeLstm, WholeModelGradientMatchesFiniteDifferences) {
  for (TreeLstmCell cell : {TreeLstmCell::tai, TreeLstmCell::dynet}) {
    SCOPED_TRACE(tree_lstm_cell_name(cell));
    SmallModel s(3, 4, 0.0, cell);
    ParameterSet& ps = s.ps;
    TreeLstmModel& m = s.m;
    const GraphBatch& b = s.b;
    Executor ex(m.program, ps);
    ex.forward(b, Mode::train);
    ps.zero_grad();
    ex.backward(m.loss);
    for (Parameter* p : ps.all()) EXPECT_LE(test::finite_difference_error(ex, b, m.loss, *p, 30), 1e-6) << p->name;
  }
}

TEST(TreeLstm, TheDynetCellHasItsOwnParametersAndBfsEqualsSerial) {
  SmallModel s(5, 6, 0.0, TreeLstmCell::dynet);
  EXPECT_EQ(s.ps["W"].value.shape().cols(), 3 * 4);  // i, o, u
  EXPECT_EQ(s.ps["Ufl"].value.shape().rows(), 4);
  const test::LossAndGrads bfs = test::loss_and_grads(s.m.program, s.ps, s.b, s.m.loss, BatchingPolicy::Bfs);
  const test::LossAndGrads serial = test::loss_and_grads(s.m.program, s.ps, s.b, s.m.loss, BatchingPolicy::Serial);
  EXPECT_NEAR(bfs.loss, serial.loss, 1e-12 * std::abs(serial.loss));
  for (size_t k = 0; k < bfs.grads.size(); ++k) EXPECT_LE(test::relative_error(bfs.grads[k], serial.grads[k]), 1e-12);
}

TEST(TreeLstm, CellNames) {
  EXPECT_EQ(parse_tree_lstm_cell("tai"), TreeLstmCell::tai);
  EXPECT_EQ(parse_tree_lstm_cell("dynet"), TreeLstmCell::dynet);
  EXPECT_CONTAINS(test::error_of([] { parse_tree_lstm_cell("gru"); }), "unknown Tree-LSTM cell 'gru'");
}

TEST(TreeLstm, BfsEqualsSerialWithDropout) {
  SmallModel s(5, 40, 0.5);
  ParameterSet& ps = s.ps;
  TreeLstmModel& m = s.m;
  const GraphBatch& b = s.b;
  const test::LossAndGrads serial = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Serial, 9);
  const test::LossAndGrads bfs = test::loss_and_grads(m.program, ps, b, m.loss, BatchingPolicy::Bfs, 9);
  EXPECT_NEAR(serial.loss, bfs.loss, 1e-10 * std::abs(serial.loss));
  ASSERT_EQ(serial.grads.size(), bfs.grads.size());
  for (size_t k = 0; k < serial.grads.size(); ++k)
    EXPECT_LE(test::relative_error(serial.grads[k], bfs.grads[k]), 1e-10);
}

// In float32, and with bf16 GEMMs (float32 master weights).
void learns_the_synthetic_treebank(Precision precision) {
  Treebank tb = synthetic_treebank(11, 600, 200, 1);
  TreeLstmConfig cfg{.vocab = tb.vocab.size(), .dim = 16, .hidden = 16, .dropout = 0.0, .init_scale = 0.1};
  ParameterSet ps(DType::f32, 4);
  add_tree_lstm_params(ps, cfg);
  TreeLstmModel m(ps, cfg);
  Trainer trainer(m.program, ps, m.loss, Adagrad({.lr = 0.1}), {.executor = {.precision = precision}});
  auto dev_accuracy = [&] {
    RootAccuracy acc;
    GraphBatch dev = GraphBatch::of(tb.dev);
    trainer.evaluate(dev);
    add_root_accuracy(dev, trainer.executor().value(m.logits), acc);
    return acc.fine();
  };
  // Majority class of the dev roots: what a model that learned nothing gets.
  std::vector<int> counts(5, 0);
  for (const InputGraph& g : tb.dev) ++counts[g.ids("labels").back()];
  double majority = *std::max_element(counts.begin(), counts.end()) / static_cast<double>(tb.dev.size());
  for (int epoch = 0; epoch < 6; ++epoch)
    for (size_t b = 0; b < tb.train.size(); b += 20)
      trainer.step(GraphBatch::of(std::span(tb.train).subspan(b, std::min<size_t>(20, tb.train.size() - b))));
  double acc = dev_accuracy();
  EXPECT_GT(acc, majority + 0.15) << "dev root accuracy " << acc << " vs majority " << majority;
}

TEST(TreeLstm, LearnsTheSyntheticTreebank) { learns_the_synthetic_treebank(Precision::fp32); }

TEST(TreeLstm, LearnsTheSyntheticTreebankWithBf16Gemms) {
  if (const std::string why = backend_for(Device::cpu()).precision_unsupported(Precision::bf16); !why.empty())
    GTEST_SKIP() << "no bf16 GEMMs on this CPU: " << why;
  learns_the_synthetic_treebank(Precision::bf16);
}

// A short SST run (1500 training trees, 500 dev and test trees, small
// cell, 3 epochs) in both precisions: bf16 GEMMs learn as float32 does,
// its test root accuracy within 3 points of float32's and well above the
// majority class. Skipped without SST.
TEST(TreeLstm, Bf16LearnsSstLikeFloat32) {
  if (const std::string why = backend_for(Device::cpu()).precision_unsupported(Precision::bf16); !why.empty())
    GTEST_SKIP() << "no bf16 GEMMs on this CPU: " << why;
  const std::string dir = test::data_dir();
  if (dir.empty()) GTEST_SKIP() << "SST not found (set SYLVA_DATA to the folder holding sst/)";
  Treebank tb = load_sst(dir + "/sst");
  tb.train.resize(1500);
  tb.dev.resize(500);
  tb.test.resize(500);
  SentimentTrainOptions o;
  o.model = {.dim = 64, .hidden = 64, .dropout = 0.2};
  o.epochs = 3;
  double fine[2] = {0, 0};
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    o.precision = p;
    fine[p == Precision::bf16] = train_sentiment(tb, o, nullptr).best_test.fine();
  }
  std::vector<int> counts(5, 0);
  for (const InputGraph& g : tb.test) ++counts[static_cast<size_t>(g.ids("labels").back())];
  const double majority = *std::max_element(counts.begin(), counts.end()) / 500.0;
  EXPECT_NEAR(fine[1], fine[0], 0.03) << "test root fine-grained: fp32 " << fine[0] << ", bf16 " << fine[1];
  EXPECT_GT(fine[1], majority + 0.05) << "bf16 " << fine[1] << " against the majority class's " << majority;
}

// The example's loop: two epochs straight, or one, saved, and resumed for
// the second, give the same state file after epoch 2 (parameters,
// optimiser, step, shuffling RNG, best epoch) byte for byte.
SentimentTrainOptions resume_options(Precision precision) {
  SentimentTrainOptions o;
  o.model = {.dim = 8, .hidden = 8, .dropout = 0.3};
  o.optimizer = "adam";
  o.lr = 0.01;
  o.batch = 16;
  o.precision = precision;
  return o;
}

TEST(TreeLstm, TrainingLoopResumesExactly) {
  const Treebank tb = synthetic_treebank(5, 120, 40, 40);
  const SentimentTrainOptions o = resume_options(Precision::fp32);
  const auto [straight, resumed] =
      check_resume(o, 2, "tree", [&](const SentimentTrainOptions& x) { return train_sentiment(tb, x, nullptr); });
  EXPECT_EQ(resumed.best_epoch, straight.best_epoch);
  EXPECT_EQ(resumed.best_test.fine_correct, straight.best_test.fine_correct);
}

// With bf16 GEMMs the state file holds the float32 masters (the bfloat16
// copies are made from them at each forward), so a bf16 run resumes as
// exactly as a float32 one, and either resumes from the other's file.
TEST(TreeLstm, Bf16TrainingLoopResumesExactly) {
  if (const std::string why = backend_for(Device::cpu()).precision_unsupported(Precision::bf16); !why.empty())
    GTEST_SKIP() << "no bf16 GEMMs on this CPU: " << why;
  const Treebank tb = synthetic_treebank(5, 120, 40, 40);
  const SentimentTrainOptions o = resume_options(Precision::bf16);
  check_resume(o, 2, "tree_bf16", [&](const SentimentTrainOptions& x) { return train_sentiment(tb, x, nullptr); });
  // An epoch in float32, saved, resumed in bf16 (and the reverse): the
  // resumed run starts from the saved masters and trains on.
  for (Precision first : {Precision::fp32, Precision::bf16}) {
    SentimentTrainOptions a = o;
    a.precision = first;
    a.epochs = 1;
    a.save_state = testing::TempDir() + "tree_cross_first.safetensors";
    train_sentiment(tb, a, nullptr);
    a.precision = first == Precision::fp32 ? Precision::bf16 : Precision::fp32;
    a.epochs = 2;
    a.resume = a.save_state;
    a.save_state = testing::TempDir() + "tree_cross_second.safetensors";
    SentimentTrainResult two;
    EXPECT_NO_THROW(two = train_sentiment(tb, a, nullptr)) << precision_name(first) << " then the other";
    EXPECT_TRUE(two.best_epoch == 1 || two.best_epoch == 2) << two.best_epoch;
  }
}

// An empty split is a clear error, not a run that trains on nothing and
// reports 0 of 0.
TEST(TreeLstm, AnEmptySplitIsAClearError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sylva_sst_empty_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "train.txt") << "";
  std::ofstream(dir / "dev.txt") << "(3 (2 a) (3 good))\n";
  std::ofstream(dir / "test.txt") << "(1 (2 a) (1 bad))\n";
  EXPECT_CONTAINS(test::error_of([&] { load_sst(dir.string()); }), "train.txt holds no trees: nothing to train on");
  std::ofstream(dir / "train.txt") << "(3 (2 a) (3 good))\n";
  std::ofstream(dir / "test.txt") << "";
  EXPECT_CONTAINS(test::error_of([&] { load_sst(dir.string()); }), "test.txt holds no trees: nothing to test on");
  fs::remove_all(dir);
  Treebank tb = synthetic_treebank(1, 4, 1, 1);
  tb.train.clear();
  EXPECT_CONTAINS(test::error_of([&] { train_sentiment(tb, SentimentTrainOptions{}, nullptr); }),
                  "a split is empty (train 0, dev 1, test 1 trees)");
}

TEST(TreeLstm, SyntheticLabelsFollowTheCompositionRule) {
  Treebank tb = synthetic_treebank(1, 50, 0, 0);
  for (const InputGraph& g : tb.train) {
    const auto& labels = g.ids("labels");
    const auto& words = g.ids("words");
    ASSERT_EQ(g.roots().size(), 1u);
    EXPECT_EQ(g.roots()[0], g.num_vertices() - 1);  // post-order
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      EXPECT_GE(labels[v], 0);
      EXPECT_LE(labels[v], 4);
      EXPECT_EQ(words[v] >= 0, g.children(v).empty());  // words exactly on leaves
    }
  }
}

}  // namespace
}  // namespace sylva::examples
