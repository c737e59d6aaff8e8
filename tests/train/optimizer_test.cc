#include "sylva/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

using Vec = std::vector<double>;

Parameter& add_param(ParameterSet& ps, const std::string& name, const Vec& value) {
  Parameter& p = ps.add(name, Shape{static_cast<int64_t>(value.size())}, Init::zeros());
  for (size_t i = 0; i < value.size(); ++i) p.value.set(static_cast<int64_t>(i), value[i]);
  return p;
}

void set_grad(Parameter& p, const Vec& g) {
  for (size_t i = 0; i < g.size(); ++i) p.grad.set(static_cast<int64_t>(i), g[i]);
}

Vec values(const Parameter& p) {
  Vec v(static_cast<size_t>(p.value.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = p.value.at(static_cast<int64_t>(i));
  return v;
}

void expect_near(const Vec& got, const Vec& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Two steps of `opt` on one float64 parameter, compared with `reference`,
// which updates (w, state) for one gradient and returns nothing.
const Vec kW0 = {1.0, -2.0, 0.5};
const Vec kG1 = {0.5, -0.25, 2.0};
const Vec kG2 = {0.1, 0.3, -1.5};

void check_two_steps(Optimizer& opt, const std::function<void(Vec& w, const Vec& g, int t)>& reference) {
  ParameterSet ps(DType::f64);
  Parameter& p = add_param(ps, "w", kW0);
  Vec w = kW0;
  int t = 0;
  for (const Vec& g : {kG1, kG2}) {
    set_grad(p, g);
    opt.step(ps);
    reference(w, g, ++t);
    expect_near(values(p), w, 1e-14);
  }
  EXPECT_EQ(opt.steps(), 2);
}

TEST(Optimizer, SgdPlain) {
  Sgd sgd{{.lr = 0.1}};
  check_two_steps(sgd, [](Vec& w, const Vec& g, int) {
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.1 * g[i];
  });
}

TEST(Optimizer, SgdMomentum) {
  Sgd sgd{{.lr = 0.1, .momentum = 0.9}};
  Vec v(3, 0.0);
  check_two_steps(sgd, [&](Vec& w, const Vec& g, int) {
    for (size_t i = 0; i < w.size(); ++i) {
      v[i] = 0.9 * v[i] + g[i];
      w[i] -= 0.1 * v[i];
    }
  });
}

TEST(Optimizer, Adagrad) {
  Adagrad ada{{.lr = 0.05, .eps = 1e-10, .initial_accumulator = 0.1}};
  Vec acc(3, 0.1);
  check_two_steps(ada, [&](Vec& w, const Vec& g, int) {
    for (size_t i = 0; i < w.size(); ++i) {
      acc[i] += g[i] * g[i];
      w[i] -= 0.05 * g[i] / (std::sqrt(acc[i]) + 1e-10);
    }
  });
}

TEST(Optimizer, AdamWithBiasCorrection) {
  const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6;
  Adam adam{{.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps}};
  Vec m(3, 0.0), v(3, 0.0);
  check_two_steps(adam, [&](Vec& w, const Vec& g, int t) {
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  });
}

TEST(Optimizer, AdamFirstStepMovesByLearningRate) {
  // Bias correction makes the first update lr * g / (|g| + eps): about lr in every coordinate.
  ParameterSet ps(DType::f64);
  Parameter& p = add_param(ps, "w", kW0);
  set_grad(p, kG1);
  Adam{{.lr = 0.01}}.step(ps);
  for (size_t i = 0; i < kW0.size(); ++i) EXPECT_NEAR(kW0[i] - values(p)[i], 0.01 * std::copysign(1.0, kG1[i]), 1e-9);
}

TEST(Optimizer, Float32MatchesFloat64Reference) {
  ParameterSet ps(DType::f32);
  Parameter& p = add_param(ps, "w", kW0);
  Adam adam{{.lr = 0.1}};
  Vec w = kW0, m(3, 0.0), v(3, 0.0);
  for (int t = 1; t <= 2; ++t) {
    const Vec& g = t == 1 ? kG1 : kG2;
    set_grad(p, g);
    adam.step(ps);
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      w[i] -= 0.1 * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-8);
    }
  }
  expect_near(values(p), w, 1e-5);
  EXPECT_EQ(p.value.dtype(), DType::f32);
}

// With two GEMM threads a large update is split over two OpenMP threads
// (dense and row-sparse): every element gets the one-thread result exactly,
// and every element with a gradient moved.
TEST(Optimizer, TwoThreadsGiveTheOneThreadUpdate) {
  Backend& cpu = backend_for(Device::cpu());
  const auto run = [&](int threads, bool sparse_rows) {
    cpu.set_threads(threads);
    ParameterSet ps(DType::f32, 3);
    Parameter& p = ps.add("E", {3000, 100}, Init::uniform(-1, 1));
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-1, 1);
    // Dense: a gradient everywhere; row-sparse: on every third row.
    RowSparsity rows;
    for (int32_t r = 0; r < 3000; r += sparse_rows ? 3 : 1) rows["E"].push_back(r);
    const Tensor start = p.value.clone();
    std::vector<Tensor> out;
    for (const std::string rule : {"adam", "adagrad"}) {
      std::unique_ptr<Optimizer> opt;
      if (rule == "adam") opt = std::make_unique<Adam>(AdamOptions{.lr = 0.01});
      else opt = std::make_unique<Adagrad>(AdagradOptions{.lr = 0.1});
      for (int step = 0; step < 2; ++step) {
        p.grad.fill_zero();
        for (int32_t r : rows["E"])
          for (int64_t c = 0; c < 100; ++c) p.grad.set(r * 100 + c, u(rng));
        opt->step(ps, sparse_rows ? &rows : nullptr);
      }
      out.push_back(p.value.clone());
    }
    for (int32_t r : rows["E"])
      for (int64_t c = 0; c < 100; ++c) EXPECT_NE(p.value.at(r * 100 + c), start.at(r * 100 + c));
    cpu.set_threads(1);
    return out;
  };
  for (bool sparse_rows : {false, true}) {
    SCOPED_TRACE(sparse_rows ? "row-sparse" : "dense");
    const std::vector<Tensor> one = run(1, sparse_rows), two = run(2, sparse_rows);
    ASSERT_EQ(one.size(), two.size());
    for (size_t k = 0; k < one.size(); ++k) EXPECT_EQ(test::relative_error(one[k], two[k]), 0.0);
  }
}

// A dense update (Adam, momentum) told which rows of the gradient are
// nonzero (Optimizer::step's `sparse`) skips reading the others; the values
// and the optimiser state must be the bits of the update that reads them,
// on one thread and two (whose shares start inside rows).
TEST(Optimizer, ADenseUpdateToldTheGradientRowsGivesTheSameBits) {
  Backend& cpu = backend_for(Device::cpu());
  const auto run = [&](const std::string& rule, int threads, bool told) {
    cpu.set_threads(threads);
    ParameterSet ps(DType::f32, 3);
    Parameter& p = ps.add("E", {2001, 37}, Init::uniform(-1, 1));
    std::unique_ptr<Optimizer> opt;
    if (rule == "adam") opt = std::make_unique<Adam>(AdamOptions{.lr = 0.01});
    else opt = std::make_unique<Sgd>(SgdOptions{.lr = 0.1, .momentum = 0.9});
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int step = 0; step < 3; ++step) {
      RowSparsity rows;
      for (int32_t r = step; r < 2001; r += 7 + step) rows["E"].push_back(r);  // other rows each step
      p.grad.fill_zero();
      for (int32_t r : rows["E"])
        for (int64_t c = 0; c < 37; ++c) p.grad.set(r * 37 + c, u(rng));
      opt->step(ps, told ? &rows : nullptr);
    }
    std::vector<Tensor> out{p.value.clone()};
    for (auto& [name, t] : opt->checkpoint_tensors(ps)) out.push_back(t->clone());
    cpu.set_threads(1);
    return out;
  };
  for (const std::string rule : {"adam", "momentum"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(rule + ", threads " + std::to_string(threads));
      const std::vector<Tensor> plain = run(rule, threads, false), told = run(rule, threads, true);
      ASSERT_EQ(plain.size(), told.size());
      for (size_t k = 0; k < plain.size(); ++k)
        EXPECT_EQ(std::memcmp(plain[k].raw(), told[k].raw(), plain[k].nbytes()), 0) << "tensor " << k;
    }
}

TEST(Optimizer, LrScaleAndSetLearningRate) {
  ParameterSet ps(DType::f64);
  Parameter& a = add_param(ps, "a", {1.0, 1.0});
  Parameter& b = add_param(ps, "b", {1.0, 1.0});
  Parameter& frozen = add_param(ps, "frozen", {1.0, 1.0});
  b.lr_scale = 0.5;
  frozen.lr_scale = 0.0;
  for (Parameter* p : ps.all()) set_grad(*p, {1.0, -2.0});
  Sgd sgd{{.lr = 0.1}};
  sgd.step(ps);
  expect_near(values(a), {0.9, 1.2}, 1e-15);
  expect_near(values(b), {0.95, 1.1}, 1e-15);
  expect_near(values(frozen), {1.0, 1.0}, 0.0);

  sgd.set_learning_rate(0.01);
  EXPECT_EQ(sgd.learning_rate(), 0.01);
  sgd.step(ps);
  expect_near(values(a), {0.89, 1.22}, 1e-15);
  EXPECT_NE(error_of([&] { sgd.set_learning_rate(-1.0); }).find("learning rate"), std::string::npos);
  EXPECT_EQ(sgd.learning_rate(), 0.01);
}

TEST(Optimizer, NonFiniteGradientThrowsAndUpdatesNothing) {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    ParameterSet ps(DType::f64);
    Parameter& first = add_param(ps, "first", {1.0, 2.0});
    Parameter& second = add_param(ps, "embeddings", {3.0, 4.0});
    set_grad(first, {0.5, 0.5});
    set_grad(second, {0.5, bad});
    Adam adam;
    std::string msg = error_of([&] { adam.step(ps); });
    EXPECT_NE(msg.find("[adam] parameter 'embeddings' has a non-finite gradient"), std::string::npos) << msg;
    EXPECT_NE(msg.find("element 1"), std::string::npos) << msg;
    expect_near(values(first), {1.0, 2.0}, 0.0);
    expect_near(values(second), {3.0, 4.0}, 0.0);
    EXPECT_EQ(adam.steps(), 0);

    // The failed step left no state behind: the next good step is Adam's first (moves by ~lr).
    set_grad(second, {0.5, 0.5});
    adam.step(ps);
    EXPECT_NEAR(values(first)[0], 1.0 - 1e-3, 1e-9);
  }
}

TEST(Optimizer, StateIsKeyedByNameAndChecked) {
  Sgd sgd{{.lr = 0.1, .momentum = 0.5}};
  ParameterSet ps(DType::f64);
  set_grad(add_param(ps, "w", {0.0, 0.0}), {1.0, 1.0});
  sgd.step(ps);
  ParameterSet other(DType::f64);
  set_grad(add_param(other, "w", {0.0, 0.0, 0.0}), {1.0, 1.0, 1.0});
  std::string msg = error_of([&] { sgd.step(other); });
  EXPECT_NE(msg.find("[sgd] parameter 'w' is float64 [3]"), std::string::npos) << msg;
  sgd.reset();
  sgd.step(other);  // fresh state: v = g, so w = -0.1
  expect_near(values(other["w"]), {-0.1, -0.1, -0.1}, 1e-15);
}

TEST(Optimizer, InvalidOptionsThrow) {
  EXPECT_NE(error_of([] { Sgd{{.lr = -0.1}}; }).find("[sgd] learning rate"), std::string::npos);
  EXPECT_NE(error_of([] { Sgd{{.momentum = 1.0}}; }).find("[sgd] momentum"), std::string::npos);
  EXPECT_NE(error_of([] { Adam{{.beta1 = 1.0}}; }).find("[adam] beta1"), std::string::npos);
  EXPECT_NE(error_of([] { Adam{{.eps = 0.0}}; }).find("[adam] eps"), std::string::npos);
  EXPECT_NE(error_of([] { Adagrad{{.initial_accumulator = -1.0}}; }).find("[adagrad] initial_accumulator"),
            std::string::npos);
}

TEST(GradUtils, GlobalNormAndClipping) {
  ParameterSet ps(DType::f64);
  Parameter& a = add_param(ps, "a", {0.0, 0.0});
  Parameter& b = add_param(ps, "b", {0.0});
  set_grad(a, {3.0, 4.0});
  set_grad(b, {12.0});
  EXPECT_DOUBLE_EQ(global_grad_norm(ps), 13.0);

  EXPECT_DOUBLE_EQ(clip_grad_norm(ps, 20.0), 13.0);  // below the threshold: untouched
  EXPECT_EQ(a.grad.at(0), 3.0);

  EXPECT_DOUBLE_EQ(clip_grad_norm(ps, 6.5), 13.0);
  EXPECT_DOUBLE_EQ(a.grad.at(0), 1.5);
  EXPECT_DOUBLE_EQ(a.grad.at(1), 2.0);
  EXPECT_DOUBLE_EQ(b.grad.at(0), 6.0);
  EXPECT_NEAR(global_grad_norm(ps), 6.5, 1e-12);

  EXPECT_NE(error_of([&] { clip_grad_norm(ps, 0.0); }).find("max_norm"), std::string::npos);

  b.grad.set(0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(clip_grad_norm(ps, 1.0)));
  EXPECT_DOUBLE_EQ(a.grad.at(0), 1.5);  // not silently zeroed or scaled
}

// Long gradients (the norm sums in several partial sums, then the tail),
// float32 and float64: every entry counts once, whatever the length.
TEST(GradUtils, GlobalNormOfLongGradients) {
  for (DType dtype : {DType::f32, DType::f64})
    for (int64_t n : {7, 8, 9, 16, 1001}) {
      ParameterSet ps(dtype);
      Parameter& p = add_param(ps, "w", Vec(static_cast<size_t>(n), 0.0));
      double want = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double g = static_cast<double>(i % 7) - 2.5;  // exact in float32
        p.grad.set(i, g);
        want += g * g;
      }
      EXPECT_DOUBLE_EQ(global_grad_norm(ps), std::sqrt(want)) << "n " << n;
    }
}

TEST(GradUtils, WeightDecayHonoursTheDecayFlag) {
  ParameterSet ps(DType::f64);
  Parameter& w = add_param(ps, "w", {2.0, -4.0});
  Parameter& bias = add_param(ps, "bias", {2.0, -4.0});
  bias.decay = false;
  set_grad(w, {1.0, 1.0});
  set_grad(bias, {1.0, 1.0});
  add_weight_decay(ps, 0.25);
  EXPECT_DOUBLE_EQ(w.grad.at(0), 1.5);
  EXPECT_DOUBLE_EQ(w.grad.at(1), 0.0);
  EXPECT_DOUBLE_EQ(bias.grad.at(0), 1.0);
  EXPECT_DOUBLE_EQ(bias.grad.at(1), 1.0);
  EXPECT_NE(error_of([&] { add_weight_decay(ps, -1.0); }).find("l2"), std::string::npos);
}

}  // namespace
}  // namespace sylva
