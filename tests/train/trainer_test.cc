#include "sylva/train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/train/metrics.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

constexpr int64_t kWords = 3, kDim = 4, kHidden = 8, kClasses = 3;

// An Elman RNN (chains) or binary recursive net (trees) with a per-vertex
// classifier: h = tanh(x·W + h_0·U0 + h_1·U1 + b), logits = h·Ws.
struct Model {
  ParameterSet ps;
  Program program{DType::f64};
  Symbol logits, loss;

  explicit Model(uint64_t seed) : ps(DType::f64, seed) {
    ps.add("E", {kWords, kDim}, Init::uniform(-1.0, 1.0));
    ps.add("W", {kDim, kHidden}, Init::glorot());
    ps.add("U0", {kHidden, kHidden}, Init::glorot());
    ps.add("U1", {kHidden, kHidden}, Init::glorot());
    ps.add("b", {kHidden}, Init::zeros()).decay = false;
    ps.add("Ws", {kHidden, kClasses}, Init::glorot());
    VertexFunction f("rnn", kHidden, DType::f64);
    Symbol x = f.pull(kDim);
    Symbol h = tanh(matmul(x, f.param(ps["W"])) + matmul(f.gather(0), f.param(ps["U0"])) +
                    matmul(f.gather(1), f.param(ps["U1"])) + f.param(ps["b"]));
    f.scatter(h);
    f.push(h);
    Symbol hs = program.apply(f, lookup(program.param(ps["E"]), program.input_ids("words")));
    logits = matmul(hs, program.param(ps["Ws"]));
    loss = softmax_cross_entropy(logits, program.input_ids("labels"));
  }
};

// Chains of 1..6 words; the last vertex is labelled with the first word,
// so the label must travel along the chain through the messages.
std::vector<InputGraph> make_chains(int n, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<InputGraph> out;
  for (int s = 0; s < n; ++s) {
    const int32_t len = 1 + static_cast<int32_t>(rng() % 6);
    InputGraph g = InputGraph::chain(len, "chain " + std::to_string(s));
    std::vector<int32_t> words(static_cast<size_t>(len)), labels(static_cast<size_t>(len), -1);
    for (int32_t& w : words) w = static_cast<int32_t>(rng() % kWords);
    labels.back() = words.front();
    g.set_ids("words", words);
    g.set_ids("labels", labels);
    out.push_back(std::move(g));
  }
  return out;
}

// Random binary trees (every vertex labelled with its word) for policy invariance.
std::vector<InputGraph> make_trees(int n, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<InputGraph> out;
  for (int s = 0; s < n; ++s) {
    std::vector<std::vector<int32_t>> children;
    std::vector<int32_t> open;  // roots of the forest built so far
    const int leaves = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < leaves; ++i) {
      open.push_back(static_cast<int32_t>(children.size()));
      children.push_back({});
    }
    while (open.size() > 1) {
      const int32_t l = open[0], r = open[1];
      open.erase(open.begin(), open.begin() + 2);
      open.push_back(static_cast<int32_t>(children.size()));
      children.push_back({l, r});
    }
    InputGraph g = InputGraph::from_children(children, "tree " + std::to_string(s));
    std::vector<int32_t> words(children.size());
    for (int32_t& w : words) w = static_cast<int32_t>(rng() % kWords);
    g.set_ids("words", words);
    g.set_ids("labels", words);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<double> flat_values(const ParameterSet& ps) {
  std::vector<double> v;
  for (const Parameter* p : ps.all())
    for (int64_t i = 0; i < p->value.numel(); ++i) v.push_back(p->value.at(i));
  return v;
}

TEST(Trainer, LossDecreasesOnChains) {
  Model m(1);
  std::vector<InputGraph> data = make_chains(64, 2);
  Trainer trainer(m.program, m.ps, m.loss, Adam{{.lr = 0.03}}, {.clip_norm = 5.0});
  const GraphBatch all = GraphBatch::of(data);
  const double before = trainer.evaluate(all);

  RunningMean first, last;
  for (int step = 0; step < 50; ++step) {
    const GraphBatch batch = GraphBatch::of(std::span<const InputGraph>(data).subspan(16 * (step % 4), 16));
    StepResult r = trainer.step(batch);
    ASSERT_TRUE(std::isfinite(r.loss) && std::isfinite(r.grad_norm));
    EXPECT_EQ(r.samples, 16);
    EXPECT_EQ(r.vertices, batch.num_vertices());
    if (step < 8) first.add(r.loss / r.samples);
    if (step >= 42) last.add(r.loss / r.samples);
  }
  EXPECT_EQ(trainer.steps(), 50);
  EXPECT_LT(last.mean(), 0.5 * first.mean());
  const double after = trainer.evaluate(all);
  EXPECT_LT(after, 0.5 * before);

  // Other symbols are readable through the executor: root accuracy is well above chance (1/3).
  std::vector<int32_t> pred = argmax_rows(trainer.executor().value(m.logits));
  EXPECT_EQ(pred.size(), static_cast<size_t>(all.num_vertices()));
  EXPECT_GT(accuracy(pred, all.ids("labels")), 0.6);
}

TEST(Trainer, FirstStepLossEqualsEvaluate) {
  Model m(3);
  std::vector<InputGraph> data = make_chains(8, 4);
  const GraphBatch batch = GraphBatch::of(data);
  Trainer trainer(m.program, m.ps, m.loss, std::make_unique<Sgd>(SgdOptions{.lr = 0.1}));
  const std::vector<double> before = flat_values(m.ps);
  const double eval_loss = trainer.evaluate(batch);
  EXPECT_EQ(flat_values(m.ps), before);  // evaluate() changes nothing
  EXPECT_DOUBLE_EQ(trainer.step(batch).loss, eval_loss);
  EXPECT_NE(flat_values(m.ps), before);
}

// Runs one SGD(lr) step with `options` on a fresh model and returns the parameter change.
std::vector<double> sgd_delta(double lr, TrainerOptions options, const GraphBatch& batch, StepResult* result,
                              bool decay_off = false) {
  Model m(5);
  if (decay_off)
    for (Parameter* p : m.ps.all()) p->decay = false;
  const std::vector<double> before = flat_values(m.ps);
  Trainer trainer(m.program, m.ps, m.loss, Sgd{{.lr = lr}}, options);
  *result = trainer.step(batch);
  std::vector<double> d = flat_values(m.ps);
  for (size_t i = 0; i < d.size(); ++i) d[i] -= before[i];
  return d;
}

TEST(Trainer, PerSampleNormalisationDividesTheGradient) {
  std::vector<InputGraph> data = make_chains(5, 6);
  const GraphBatch batch = GraphBatch::of(data);
  StepResult none, per_sample;
  std::vector<double> d_none = sgd_delta(0.1, {.normalisation = LossScale::none}, batch, &none);
  std::vector<double> d_mean = sgd_delta(0.1, {.normalisation = LossScale::per_sample}, batch, &per_sample);
  EXPECT_DOUBLE_EQ(none.loss, per_sample.loss);  // the reported loss is never normalised
  EXPECT_NEAR(none.grad_norm, 5.0 * per_sample.grad_norm, 1e-12);
  for (size_t i = 0; i < d_none.size(); ++i) EXPECT_NEAR(d_none[i], 5.0 * d_mean[i], 1e-14);
}

TEST(Trainer, ClipNormBoundsTheUpdate) {
  std::vector<InputGraph> data = make_chains(5, 7);
  const GraphBatch batch = GraphBatch::of(data);
  StepResult r;
  std::vector<double> d = sgd_delta(1.0, {.clip_norm = 1e-3}, batch, &r);
  EXPECT_GT(r.grad_norm, 1e-3);  // reported before clipping
  double sq = 0.0;
  for (double x : d) sq += x * x;
  EXPECT_NEAR(std::sqrt(sq), 1e-3, 1e-12);  // SGD with lr 1 moves by the clipped gradient
}

TEST(Trainer, WeightDecayAddsL2TimesValue) {
  std::vector<InputGraph> data = make_chains(5, 8);
  const GraphBatch batch = GraphBatch::of(data);
  const double lr = 0.1, l2 = 0.01;
  StepResult r0, r1, r2;
  std::vector<double> plain = sgd_delta(lr, {}, batch, &r0);
  std::vector<double> decayed = sgd_delta(lr, {.weight_decay = l2}, batch, &r1);
  std::vector<double> exempt = sgd_delta(lr, {.weight_decay = l2}, batch, &r2, /*decay_off=*/true);
  Model fresh(5);  // same seed: the initial values
  const std::vector<double> w0 = flat_values(fresh.ps);
  size_t i = 0;
  for (const Parameter* p : fresh.ps.all())
    for (int64_t k = 0; k < p->value.numel(); ++k, ++i) {
      const double expected = p->decay ? -lr * l2 * w0[i] : 0.0;
      EXPECT_NEAR(decayed[i] - plain[i], expected, 1e-15) << p->name << "[" << k << "]";
      EXPECT_NEAR(exempt[i], plain[i], 1e-15) << p->name << "[" << k << "]";
    }
}

TEST(Trainer, SerialAndBfsTrainIdentically) {
  std::vector<InputGraph> data = make_trees(12, 9);
  Model serial(11), bfs(11);
  Trainer ts(serial.program, serial.ps, serial.loss, Adagrad{{.lr = 0.1}},
             {.executor = {.policy = BatchingPolicy::Serial}});
  Trainer tb(bfs.program, bfs.ps, bfs.loss, Adagrad{{.lr = 0.1}}, {.executor = {.policy = BatchingPolicy::Bfs}});
  for (int step = 0; step < 3; ++step) {
    const GraphBatch batch = GraphBatch::of(std::span<const InputGraph>(data).subspan(4 * static_cast<size_t>(step), 4));
    StepResult rs = ts.step(batch), rb = tb.step(batch);
    EXPECT_NEAR(rs.loss, rb.loss, 1e-12);
    EXPECT_NEAR(rs.grad_norm, rb.grad_norm, 1e-12);
  }
  EXPECT_GT(tb.executor().schedule().tasks.size(), 0u);
  EXPECT_LT(tb.executor().schedule().tasks.size(), ts.executor().schedule().tasks.size());
  std::vector<double> a = flat_values(serial.ps), b = flat_values(bfs.ps);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

// TrainerOptions::executor reaches the Executor as given (every engine
// optimisation switched off here), and training without the optimisations
// gives the default options' losses and parameters.
TEST(Trainer, PassesItsExecutorOptionsUnchanged) {
  std::vector<InputGraph> data = make_trees(8, 10);
  const GraphBatch batch = GraphBatch::of(data);
  const ExecutorOptions plain{.policy = BatchingPolicy::Serial, .seed = 9, .threads = 1,
                              .optimisations = Optimisations::none(), .ios_options = {.r = 2, .s = 4}};
  Model a(12), b(12);
  Trainer unoptimised(a.program, a.ps, a.loss, Adam{{.lr = 0.01}}, {.executor = plain, .clip_norm = 1.0});
  Trainer optimised(b.program, b.ps, b.loss, Adam{{.lr = 0.01}}, {.clip_norm = 1.0});
  const ExecutorOptions& got = unoptimised.executor().options();
  EXPECT_EQ(got.policy, plain.policy);
  EXPECT_EQ(got.seed, plain.seed);
  EXPECT_EQ(got.threads, plain.threads);
  EXPECT_EQ(got.optimisations, Optimisations::none()) << got.optimisations.names();
  EXPECT_EQ(got.ios_options.r, 2);
  EXPECT_EQ(got.ios_options.s, 4);
  EXPECT_EQ(unoptimised.options().executor.policy, BatchingPolicy::Serial);
  for (int step = 0; step < 3; ++step) {
    const StepResult ru = unoptimised.step(batch), ro = optimised.step(batch);
    EXPECT_NEAR(ru.loss, ro.loss, 1e-12 * std::abs(ro.loss)) << "step " << step;
    EXPECT_NEAR(ru.grad_norm, ro.grad_norm, 1e-12 * ro.grad_norm) << "step " << step;
  }
  const std::vector<double> va = flat_values(a.ps), vb = flat_values(b.ps);
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-12) << i;
}

TEST(Trainer, NonFiniteLossThrowsBeforeAnyUpdate) {
  Model m(12);
  std::vector<InputGraph> data = make_chains(4, 13);
  const GraphBatch batch = GraphBatch::of(data);
  m.ps["Ws"].value.set(0, std::numeric_limits<double>::quiet_NaN());
  Trainer trainer(m.program, m.ps, m.loss, Adam{});
  const std::vector<double> before = flat_values(m.ps);
  std::string msg = error_of([&] { trainer.step(batch); });
  EXPECT_NE(msg.find("[trainer] the loss is nan"), std::string::npos) << msg;
  EXPECT_EQ(trainer.steps(), 0);
  const std::vector<double> after = flat_values(m.ps);
  for (size_t i = 0; i < after.size(); ++i)
    if (!std::isnan(before[i])) {
      EXPECT_EQ(after[i], before[i]);
    }
}

TEST(Trainer, RejectsBadArguments) {
  Model m(14);
  Symbol rowed = m.logits;
  EXPECT_NE(error_of([&] { Trainer(m.program, m.ps, rowed, Sgd{}); }).find("[trainer] the loss must be a fixed scalar"),
            std::string::npos);
  Model other(14);
  EXPECT_NE(error_of([&] { Trainer(m.program, m.ps, other.loss, Sgd{}); }).find("not a symbol"), std::string::npos);
  EXPECT_NE(error_of([&] { Trainer(m.program, m.ps, m.loss, std::unique_ptr<Optimizer>{}); }).find("no optimiser"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Trainer(m.program, m.ps, m.loss, Sgd{}, {.clip_norm = -1.0}); }).find("clip_norm"),
            std::string::npos);
  Trainer trainer(m.program, m.ps, m.loss, Sgd{});
  EXPECT_NE(error_of([&] { trainer.step(GraphBatch{}); }).find("empty batch"), std::string::npos);
}

TEST(Metrics, ArgmaxAccuracyMeanTimer) {
  Tensor t(Shape{3, 3}, DType::f32);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.1f, 0.7f, 0.7f, nan, -1.0f, 2.0f, -3.0f, -2.0f, -5.0f};
  for (size_t i = 0; i < x.size(); ++i) t.set(static_cast<int64_t>(i), x[i]);
  EXPECT_EQ(argmax_rows(t), (std::vector<int32_t>{1, 2, 1}));  // ties: first; NaN loses
  EXPECT_NE(error_of([] { argmax_rows(Tensor(Shape{2, 2}, DType::i32)); }).find("float32 or float64"),
            std::string::npos);

  const std::vector<int32_t> pred = {1, 2, 1, 0}, labels = {1, -1, 0, 0};
  EXPECT_DOUBLE_EQ(accuracy(pred, labels), 2.0 / 3.0);
  EXPECT_NE(error_of([&] { accuracy(pred, std::vector<int32_t>{1}); }).find("[accuracy]"), std::string::npos);

  RunningMean mean;
  EXPECT_EQ(mean.mean(), 0.0);
  mean.add(1.0);
  mean.add(4.0, 2.0);
  EXPECT_DOUBLE_EQ(mean.mean(), 3.0);
  EXPECT_DOUBLE_EQ(mean.weight(), 3.0);
  mean.reset();
  EXPECT_EQ(mean.weight(), 0.0);

  Timer timer;
  EXPECT_GE(timer.seconds(), 0.0);
  EXPECT_GE(timer.rate(100.0), 0.0);
}

}  // namespace
}  // namespace sylva
