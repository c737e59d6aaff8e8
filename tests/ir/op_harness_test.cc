// Op harness (after ggml's test-backend-ops): every user-visible op against a
// naive double-precision reference in float64 and float32, and its gradient
// against central finite differences in float64. Inputs are parameters, so
// gradients land in the ParameterSet; rowed inputs are lookups of a [rows, d]
// parameter by per-vertex ids 0..rows-1. The loss is sum(y * W), W random.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/core/error.h"
#include "sylva/frontend/program.h"
#include "sylva/passes/autodiff.h"
#include "sylva/runtime/executor.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/input_graph.h"
#include "support/naive_mat.h"
#include "support/test_device.h"

namespace sylva {
namespace {

using ir::OpKind;

using namespace test::naive;  // Mat and the reference loops (support/naive_mat.h)
using Syms = std::vector<Symbol>;

// ---- cases -------------------------------------------------------------------------
struct Input {
  std::string name;
  bool rowed = false;
  Shape shape;  // rowed: {cols}; fixed: the full shape
  double lo = -1.0, hi = 1.0;
  bool mixed_sign = false;  // magnitudes in [lo, hi], about half negated (keeps relu away from 0)
};
Input rowed(std::string n, int64_t cols, double lo = -1, double hi = 1, bool mixed = false) {
  return {std::move(n), true, Shape{cols}, lo, hi, mixed};
}
Input fixed(std::string n, Shape s, double lo = -1, double hi = 1, bool mixed = false) {
  return {std::move(n), false, std::move(s), lo, hi, mixed};
}

struct OpCase {
  std::string name;
  OpKind op = OpKind::Count_;  // the op under test (the coverage test checks the program uses it)
  std::vector<Input> inputs;
  std::function<Symbol(Program&, const Syms&)> build;
  std::function<Mat(const Mats&)> ref;  // null: no naive forward (dropout in training)
  int32_t rows = 5;                     // vertices in the batch = rows of rowed values
  std::map<std::string, std::vector<int32_t>> ids;  // extra per-vertex ids, in vertex order
  Mode mode = Mode::train;
  bool fresh_executor = false;  // a new Executor per forward, so a random op sees the same step
};
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

constexpr const char* kRowIds = "row";
constexpr const char* kWeight = "loss_weight";

using IdMap = std::map<std::string, std::vector<int32_t>>;

// Two samples without edges holding ids.begin()->second.size() vertices;
// each per-vertex id vector is split between them.
GraphBatch make_batch(std::vector<InputGraph>& graphs, const IdMap& ids) {
  const int32_t rows = static_cast<int32_t>(ids.begin()->second.size());
  int32_t offset = 0;
  for (int32_t n : {rows / 2, rows - rows / 2}) {
    if (n == 0) continue;
    graphs.push_back(InputGraph::from_children(std::vector<std::vector<int32_t>>(static_cast<size_t>(n)), "harness"));
    for (const auto& [name, v] : ids) graphs.back().set_ids(name, {v.begin() + offset, v.begin() + offset + n});
    offset += n;
  }
  return GraphBatch::of(graphs);
}

// Program, parameters and batch for one case. `values_from` (a float64 rig's
// parameters) makes a float32 rig see the same, rounded, inputs.
struct Rig {
  const OpCase& c;
  ParameterSet ps;
  Program p;
  std::vector<InputGraph> graphs, warm_graphs;
  GraphBatch batch, warm;  // warm: a larger batch with other (valid) ids, run first to leave stale buffers
  Syms xs;
  Symbol y, loss;

  Rig(const OpCase& oc, DType dt, const ParameterSet* values_from = nullptr) : c(oc), ps(dt, 1234), p(dt) {
    IdMap ids = c.ids, warm_ids;
    ids[kRowIds].resize(static_cast<size_t>(c.rows));
    std::iota(ids[kRowIds].begin(), ids[kRowIds].end(), 0);
    for (const auto& [name, v] : ids)
      for (int32_t i = 0; i < c.rows + 2; ++i)
        warm_ids[name].push_back(std::max(0, v[static_cast<size_t>(c.rows - 1 - i % c.rows)]));
    batch = make_batch(graphs, ids);
    warm = make_batch(warm_graphs, warm_ids);
    for (const Input& in : c.inputs) {
      Parameter& prm = add(in.name, in.rowed ? Shape{c.rows, in.shape.cols()} : in.shape, in.lo, in.hi, values_from);
      if (in.mixed_sign && !values_from)
        for (int64_t i = 0; i < prm.value.numel(); ++i)
          if (((static_cast<uint64_t>(i) * 2654435761u) >> 5) & 1) prm.value.set(i, -prm.value.at(i));
      Symbol x = p.param(prm);
      xs.push_back(in.rowed ? lookup(x, p.input_ids(kRowIds)) : x);
    }
    y = c.build(p, xs);
    const ir::ValueType& t = y.type();
    Symbol w = p.param(add(kWeight, t.rowed ? Shape{c.rows, t.cols()} : t.shape, -1, 1, values_from));
    loss = sum(y * (t.rowed ? lookup(w, p.input_ids(kRowIds)) : w));
  }

  Parameter& add(const std::string& name, Shape s, double lo, double hi, const ParameterSet* from) {
    Parameter& prm = ps.add(name, std::move(s), Init::uniform(lo, hi));
    if (from)
      for (int64_t i = 0; i < prm.value.numel(); ++i) prm.value.set(i, (*from)[name].value.at(i));
    return prm;
  }
  std::unique_ptr<Executor> executor(ExecutorOptions o = {}) {
    return std::make_unique<Executor>(p, ps, test::on_test_device(o));
  }
  // An executor that has run forward and backward on `warm`: kernels must
  // overwrite (not assume zeroed) reused buffers. Leaves gradients dirty.
  std::unique_ptr<Executor> warmed_executor() {
    auto ex = executor();
    ex->forward(warm, c.mode);
    ex->backward(loss);
    return ex;
  }
  Mats input_mats() const {
    Mats m;
    for (const Input& in : c.inputs) m.push_back(to_mat(ps[in.name].value));
    return m;
  }
};

// Largest |got - want| / max(1, |want|); on failure names the element.
void expect_close(const Mat& got, const Mat& want, double tol, const std::string& what) {
  ASSERT_EQ(got.r, want.r) << what << ": rows";
  ASSERT_EQ(got.c, want.c) << what << ": cols";
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.v.size(); ++i) {
    double err = std::abs(got.v[i] - want.v[i]) / std::max(1.0, std::abs(want.v[i]));
    if (!std::isnan(worst) && !(err <= worst)) worst = err, at = i;  // a NaN sticks and fails
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got.v[at] << ", reference " << want.v[at];
}

void check_forward(const OpCase& c, DType dt, double tol) {
  Rig r64(c, DType::f64);
  std::unique_ptr<Rig> r32;
  if (dt == DType::f32) r32 = std::make_unique<Rig>(c, DType::f32, &r64.ps);
  Rig& r = r32 ? *r32 : r64;
  auto ex = r.warmed_executor();
  ex->forward(r.batch, c.mode);
  expect_close(to_mat(ex->value(r.y)), c.ref(r.input_mats()), tol, c.name + " in " + std::string(dtype_name(dt)));
}

// Gradient of every input vs central differences; error relative to
// max(|analytic|, |numeric|, 1e-2) so roundoff in tiny entries (~1e-10) does not count.
void check_gradient(const OpCase& c) {
  constexpr double h = 1e-6, tol = 1e-6;
  Rig r(c, DType::f64);
  auto ex = r.warmed_executor();
  ex->forward(r.batch, c.mode);
  r.ps.zero_grad();
  ex->backward(r.loss);
  auto loss_at = [&] {
    if (c.fresh_executor) ex = r.warmed_executor();
    ex->forward(r.batch, c.mode);
    return ex->scalar(r.loss);
  };
  for (const Input& in : c.inputs) {
    Parameter& prm = r.ps[in.name];
    const Tensor grad = prm.grad.clone();
    double worst = 0, largest = 0, g_at = 0, fd_at = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < prm.value.numel(); ++i) {
      const double v = prm.value.at(i);
      prm.value.set(i, v + h);
      const double lp = loss_at();
      prm.value.set(i, v - h);
      const double lm = loss_at();
      prm.value.set(i, v);
      const double fd = (lp - lm) / (2 * h), g = grad.at(i);
      const double err = std::abs(g - fd) / std::max({std::abs(g), std::abs(fd), 1e-2});
      largest = std::max(largest, std::abs(fd));
      if (!std::isnan(worst) && !(err <= worst)) worst = err, at = i, g_at = g, fd_at = fd;
    }
    EXPECT_LE(worst, tol) << c.name << ": d loss / d " << in.name << "[" << at << "] is " << g_at
                          << ", finite differences give " << fd_at;
    EXPECT_GT(largest, 1e-3) << c.name << ": the loss does not depend on " << in.name << " (vacuous case)";
  }
}

Symbol binop(OpKind k, Symbol a, Symbol b) { return k == OpKind::Add ? a + b : k == OpKind::Sub ? a - b : a * b; }
double binop(OpKind k, double a, double b) { return k == OpKind::Add ? a + b : k == OpKind::Sub ? a - b : a * b; }

const std::vector<int32_t> kLabels = {2, -1, 0, 4, 4, -1, 1};  // 7 rows, 5 classes
const std::vector<int32_t> kWords = {3, -1, 0, 3, 5, -1, 2};   // 7 rows, table of 6

Mat xent_ref(const Mat& x, bool mean) {
  double loss = 0;
  int n = 0;
  for (int64_t i = 0; i < x.r; ++i) {
    if (kLabels[static_cast<size_t>(i)] < 0) continue;
    loss += row_lse(x, i) - x(i, kLabels[static_cast<size_t>(i)]);
    ++n;
  }
  return scalar(mean ? loss / n : loss);
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cs;
  auto add = [&](std::string name, OpKind op, std::vector<Input> in, std::function<Symbol(Program&, const Syms&)> b,
                 std::function<Mat(const Mats&)> ref) -> OpCase& {
    OpCase& c = cs.emplace_back();
    c.name = std::move(name);
    c.op = op;
    c.inputs = std::move(in);
    c.build = std::move(b);
    c.ref = std::move(ref);
    return c;
  };
  // matmul: the four layouts that arise (rowed·fixed, rowed·fixedᵀ, rowedᵀ·rowed, fixed·fixed) + fixed transposes.
  struct Mm { const char* name; Input a, b; bool ta, tb; };
  for (const Mm& m : {Mm{"rowed_fixed", rowed("A", 3), fixed("B", {3, 7}), false, false},
                      Mm{"rowed_fixedT", rowed("A", 3), fixed("B", {7, 3}), false, true},
                      Mm{"rowedT_rowed", rowed("A", 3), rowed("B", 7), true, false},
                      Mm{"fixed_fixed", fixed("A", {3, 4}), fixed("B", {4, 6}), false, false},
                      Mm{"fixedT_fixed", fixed("A", {4, 3}), fixed("B", {4, 6}), true, false},
                      Mm{"fixed_fixedT", fixed("A", {3, 4}), fixed("B", {6, 4}), false, true},
                      Mm{"fixedT_fixedT", fixed("A", {4, 3}), fixed("B", {6, 4}), true, true},
                      Mm{"vector_fixed", fixed("A", {4}), fixed("B", {4, 6}), false, false}}) {
    bool ta = m.ta, tb = m.tb;
    add(std::string("matmul_") + m.name, OpKind::MatMul, {m.a, m.b},
        [=](Program&, const Syms& x) { return matmul(x[0], x[1], ta, tb); },
        [=](const Mats& x) { return mm(x[0], x[1], ta, tb); }).rows = 6;
  }
  // add / sub / mul in every broadcasting layout.
  struct Bin { const char* name; Input a, b; };
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul})
    for (const Bin& b : {Bin{"rowed_rowed", rowed("A", 4), rowed("B", 4)},
                         Bin{"rowed_vector", rowed("A", 4), fixed("B", {4})},
                         Bin{"vector_rowed", fixed("A", {4}), rowed("B", 4)},
                         Bin{"fixed_fixed", fixed("A", {3, 4}), fixed("B", {3, 4})},
                         Bin{"fixed_vector", fixed("A", {3, 4}), fixed("B", {4})},
                         Bin{"vector_fixed", fixed("A", {4}), fixed("B", {3, 4})}})
      add(std::string(ir::op_name(k)) + "_" + b.name, k, {b.a, b.b},
          [=](Program&, const Syms& x) { return binop(k, x[0], x[1]); },
          [=](const Mats& x) { return zip(x[0], x[1], [=](double u, double v) { return binop(k, u, v); }); });
  add("mul_square", OpKind::Mul, {rowed("A", 4)}, [](Program&, const Syms& x) { return x[0] * x[0]; },
      [](const Mats& x) { return map(x[0], [](double v) { return v * v; }); });
  // Unary elementwise.
  struct Un { const char* name; OpKind op; Input x; Symbol (*f)(Symbol); double (*ref)(double); };
  for (const Un& u : {Un{"tanh", OpKind::Tanh, rowed("X", 4), [](Symbol s) { return tanh(s); },
                         [](double v) { return std::tanh(v); }},
                      Un{"tanh_fixed", OpKind::Tanh, fixed("X", {3, 4}), [](Symbol s) { return tanh(s); },
                         [](double v) { return std::tanh(v); }},
                      Un{"sigmoid", OpKind::Sigmoid, rowed("X", 4, -3, 3), [](Symbol s) { return sigmoid(s); },
                         [](double v) { return 1 / (1 + std::exp(-v)); }},
                      Un{"relu", OpKind::Relu, rowed("X", 4, 0.1, 1, true), [](Symbol s) { return relu(s); },
                         [](double v) { return std::max(v, 0.0); }},
                      Un{"exp", OpKind::Exp, rowed("X", 4), [](Symbol s) { return exp(s); },
                         [](double v) { return std::exp(v); }},
                      Un{"log", OpKind::Log, rowed("X", 4, 0.2, 3), [](Symbol s) { return log(s); },
                         [](double v) { return std::log(v); }},
                      Un{"scale", OpKind::Scale, rowed("X", 4), [](Symbol s) { return scale(s, -1.7); },
                         [](double v) { return -1.7 * v; }},
                      Un{"scale_operator", OpKind::Scale, fixed("X", {3, 4}), [](Symbol s) { return 2.5 * s; },
                         [](double v) { return 2.5 * v; }}}) {
    auto f = u.f;
    auto ref = u.ref;
    add(u.name, u.op, {u.x}, [=](Program&, const Syms& x) { return f(x[0]); },
        [=](const Mats& x) { return map(x[0], ref); });
  }
  // Column structure.
  add("concat_rowed", OpKind::Concat, {rowed("A", 2), rowed("B", 3), rowed("C", 4)},
      [](Program&, const Syms& x) { return concat({x[0], x[1], x[2]}); }, [](const Mats& x) { return hcat(x); });
  add("concat_fixed", OpKind::Concat, {fixed("A", {3, 2}), fixed("B", {3, 5})},
      [](Program&, const Syms& x) { return concat({x[0], x[1]}); }, [](const Mats& x) { return hcat(x); });
  add("concat_vectors", OpKind::Concat, {fixed("A", {2}), fixed("B", {3})},
      [](Program&, const Syms& x) { return concat({x[0], x[1]}); }, [](const Mats& x) { return hcat(x); });
  add("concat_repeated", OpKind::Concat, {rowed("A", 2), rowed("B", 3)},
      [](Program&, const Syms& x) { return concat({x[0], x[1], x[0]}); },
      [](const Mats& x) { return hcat({x[0], x[1], x[0]}); });
  add("slice_rowed", OpKind::Slice, {rowed("X", 7)}, [](Program&, const Syms& x) { return slice(x[0], 2, 5); },
      [](const Mats& x) { return cols_of(x[0], 2, 5); });
  add("slice_fixed", OpKind::Slice, {fixed("X", {3, 7})}, [](Program&, const Syms& x) { return slice(x[0], 1, 6); },
      [](const Mats& x) { return cols_of(x[0], 1, 6); });
  add("slice_vector", OpKind::Slice, {fixed("X", {7})}, [](Program&, const Syms& x) { return slice(x[0], 0, 3); },
      [](const Mats& x) { return cols_of(x[0], 0, 3); });
  add("split_rowed", OpKind::Slice, {rowed("X", 6)},
      [](Program&, const Syms& x) {
        auto s = split<3>(x[0]);
        return s[0] * s[1] + s[2];
      },
      [](const Mats& x) {
        Mat p = zip(cols_of(x[0], 0, 2), cols_of(x[0], 2, 4), [](double u, double v) { return u * v; });
        return zip(p, cols_of(x[0], 4, 6), [](double u, double v) { return u + v; });
      });
  // Reductions.
  for (bool row : {true, false}) {
    Input x = row ? rowed("X", 4) : fixed("X", {3, 4});
    std::string sfx = row ? "_rowed" : "_fixed";
    add("sum" + sfx, OpKind::Sum, {x}, [](Program&, const Syms& s) { return sum(s[0]); },
        [](const Mats& m) { return scalar(total(m[0])); });
    add("mean" + sfx, OpKind::Mean, {x}, [](Program&, const Syms& s) { return mean(s[0]); },
        [](const Mats& m) { return scalar(total(m[0]) / static_cast<double>(m[0].v.size())); });
    add("sum_rows" + sfx, OpKind::SumRows, {x}, [](Program&, const Syms& s) { return sum_rows(s[0]); },
        [](const Mats& m) { return col_sums(m[0]); });
  }
  // Softmax family and the loss.
  struct Sm { const char* name; Input x; };
  for (bool lg : {false, true})
    for (const Sm& m : {Sm{"", rowed("X", 6, -3, 3)}, Sm{"_fixed", fixed("X", {3, 6}, -3, 3)},
                        Sm{"_large", rowed("X", 6, -25, 25)}})
      add(std::string(lg ? "log_softmax" : "softmax") + m.name, lg ? OpKind::LogSoftmax : OpKind::Softmax, {m.x},
          [=](Program&, const Syms& x) { return lg ? log_softmax(x[0]) : softmax(x[0]); },
          [=](const Mats& x) { return softmax_ref(x[0], lg); });
  for (ir::Reduction red : {ir::Reduction::sum, ir::Reduction::mean}) {
    bool m = red == ir::Reduction::mean;
    OpCase& c = add(m ? "xent_mean" : "xent_sum", OpKind::SoftmaxCrossEntropy, {rowed("X", 5, -2, 2)},
                    [=](Program& p, const Syms& x) { return softmax_cross_entropy(x[0], p.input_ids("label"), red); },
                    [=](const Mats& x) { return xent_ref(x[0], m); });
    c.rows = 7;
    c.ids["label"] = kLabels;
  }
  OpCase& lk = add("lookup", OpKind::Lookup, {fixed("T", {6, 4})},
                   [](Program& p, const Syms& x) { return lookup(x[0], p.input_ids("word")); },
                   [](const Mats& x) {
                     Mat o(7, x[0].c);
                     for (int64_t i = 0; i < 7; ++i)
                       for (int64_t j = 0; kWords[static_cast<size_t>(i)] >= 0 && j < o.c; ++j)
                         o(i, j) = x[0](kWords[static_cast<size_t>(i)], j);
                     return o;
                   });
  lk.rows = 7;
  lk.ids["word"] = kWords;
  // Dropout: identity in evaluation. In training the mask is keyed on the
  // executor's step, so a new executor per forward (each at the same step)
  // keeps the mask fixed for finite differences.
  add("dropout_eval", OpKind::DropoutMask, {rowed("X", 5)}, [](Program&, const Syms& x) { return dropout(x[0], 0.4); },
      [](const Mats& x) { return x[0]; }).mode = Mode::eval;
  add("dropout_train", OpKind::DropoutMask, {rowed("X", 5)},
      [](Program&, const Syms& x) { return dropout(x[0], 0.4); }, nullptr).fresh_executor = true;
  return cs;
}

const std::vector<OpCase>& all_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

std::vector<OpCase> forward_cases() {
  std::vector<OpCase> out;
  for (const OpCase& c : all_cases())
    if (c.ref) out.push_back(c);
  return out;
}

std::string case_name(const testing::TestParamInfo<OpCase>& info) { return info.param.name; }

class OpForward : public testing::TestWithParam<OpCase> {};
class OpGradient : public testing::TestWithParam<OpCase> {};

// bf16 (ExecutorOptions::precision): a matmul rounds its operands to
// bfloat16 (unit roundoff u = 2^-8) and sums k products in float32; every
// other op runs as in float32, bit for bit (on CUDA, to rounding). The matmul's tolerance is
// derived per element from its operands' magnitudes -- the reference
// applied to |A| and |B| -- as (2u + u² + k·2^-24)·(|A|·|B|), k bounded by
// A's larger side; the reference is float64 on the float32 inputs.
void check_forward_bf16(const OpCase& c) {
  if (const std::string why = test::precision_unsupported(Precision::bf16); !why.empty())
    GTEST_SKIP() << "no bf16 GEMMs here: " << why;
  Rig r64(c, DType::f64), r(c, DType::f32, &r64.ps);
  ExecutorOptions bf16;
  bf16.precision = Precision::bf16;
  auto ex = r.executor(bf16);
  ex->forward(r.batch, c.mode);
  const Tensor got = ex->value(r.y);
  if (c.op != OpKind::MatMul) {
    auto ex32 = r.executor();
    ex32->forward(r.batch, c.mode);
    const Tensor want = ex32->value(r.y);
    ASSERT_EQ(got.nbytes(), want.nbytes());
    if (test::test_device() == "cuda")  // atomics may order a reduction's sums otherwise from run to run
      expect_close(to_mat(got), to_mat(want), 1e-6, c.name + " in bf16");
    else
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0) << c.name << ": not float32's bits under bf16";
    return;
  }
  Mats in = r.input_mats(), magnitude = in;
  for (Mat& m : magnitude)
    for (double& v : m.v) v = std::abs(v);
  const double k = static_cast<double>(std::max(in[0].r, in[0].c)), u = std::ldexp(1.0, -8);
  const Mat want = c.ref(in), bound = c.ref(magnitude), out = to_mat(got);
  ASSERT_EQ(out.v.size(), want.v.size()) << c.name;
  for (size_t i = 0; i < out.v.size(); ++i)
    EXPECT_LE(std::abs(out.v[i] - want.v[i]), (2 * u + u * u + k * std::ldexp(1.0, -24)) * bound.v[i])
        << c.name << ": element " << i << " is " << out.v[i] << ", reference " << want.v[i];
}

TEST_P(OpForward, Float64) { check_forward(GetParam(), DType::f64, 1e-12); }
TEST_P(OpForward, Bf16) { check_forward_bf16(GetParam()); }
TEST_P(OpForward, Float32) { check_forward(GetParam(), DType::f32, 1e-5); }
TEST_P(OpGradient, FiniteDifferences) { check_gradient(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Harness, OpForward, testing::ValuesIn(forward_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Harness, OpGradient, testing::ValuesIn(all_cases()), case_name);

// ---- coverage ------------------------------------------------------------------------
bool is_user_op(OpKind k) {
  return !ir::has(ir::op_def(k).flags, ir::OpFlag::source | ir::OpFlag::boundary | ir::OpFlag::internal);
}

TEST(OpHarnessCoverage, EveryUserVisibleOpHasACase) {
  std::set<OpKind> declared, in_gradients;
  for (const OpCase& c : all_cases()) {
    Rig r(c, DType::f64);
    auto used = r.p.graph().find(c.op);
    EXPECT_FALSE(used.empty()) << c.name << " claims to test '" << ir::op_name(c.op) << "' but does not use it";
    declared.insert(c.op);
    auto grad = passes::differentiate_program(r.p.graph(), r.loss.id());  // keep alive while iterating
    for (const ir::Node& n : grad->nodes()) in_gradients.insert(n.op);
  }
  for (OpKind k : ir::all_ops()) {
    const ir::OpFlag f = ir::op_def(k).flags;
    if (is_user_op(k)) {
      EXPECT_TRUE(declared.count(k)) << "op '" << ir::op_name(k) << "' has no harness case; add one to make_cases()";
    } else if (ir::has(f, ir::OpFlag::internal) && !ir::has(f, ir::OpFlag::source | ir::OpFlag::boundary)) {
      EXPECT_TRUE(in_gradients.count(k)) << "gradient op '" << ir::op_name(k) << "' is not exercised by any case";
    }
  }
}

TEST(OpHarnessCoverage, CpuHasAKernelForEveryComputeOp) {
  Backend& cpu = backend_for(Device::cpu());
  for (OpKind k : ir::all_ops()) {
    if (ir::has(ir::op_def(k).flags, ir::OpFlag::source | ir::OpFlag::boundary)) continue;
    EXPECT_TRUE(cpu.supports(k)) << "no CPU kernel for '" << ir::op_name(k) << "'";
  }
}

TEST(OpHarnessCoverage, EveryUserOpButDropoutMaskHasAGradientRule) {
  for (OpKind k : ir::all_ops()) {
    if (is_user_op(k) && k != OpKind::DropoutMask) {  // the mask is a constant to autodiff
      EXPECT_NE(ir::op_def(k).grad, nullptr) << "'" << ir::op_name(k) << "' has no gradient rule";
    }
  }
}

// ---- dropout in training -----------------------------------------------------------------
OpCase dropout_case(double p, Input x, int32_t rows) {
  OpCase c;
  c.name = "dropout";
  c.op = OpKind::DropoutMask;
  c.inputs = {std::move(x)};
  c.build = [=](Program&, const Syms& s) { return dropout(s[0], p); };
  c.rows = rows;
  return c;
}

TEST(OpHarnessDropout, TrainValuesAreZeroOrScaledAndDropFractionIsP) {
  for (double p : {0.1, 0.5}) {
    std::vector<bool> mask64;
    for (DType dt : {DType::f64, DType::f32}) {
      OpCase c = dropout_case(p, fixed("X", {400, 250}, 0.5, 1.5, true), 1);
      Rig r(c, dt);
      auto ex = r.executor();
      ex->forward(r.batch, Mode::train);
      const Tensor x = r.ps["X"].value, y = ex->value(r.y);
      const double tol = dt == DType::f64 ? 1e-14 : 1e-6;
      std::vector<bool> mask;
      int64_t bad = 0, same_as_previous_row = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        mask.push_back(y.at(i) != 0.0);
        bad += mask.back() && std::abs(y.at(i) - x.at(i) / (1 - p)) > tol * std::abs(y.at(i));
      }
      for (int64_t row = 1; row < 400; ++row)
        same_as_previous_row += std::equal(mask.begin() + row * 250, mask.begin() + (row + 1) * 250,
                                           mask.begin() + (row - 1) * 250);
      const double dropped = static_cast<double>(std::count(mask.begin(), mask.end(), false));
      std::string what = "p = " + std::to_string(p) + " in " + std::string(dtype_name(dt));
      EXPECT_EQ(bad, 0) << "kept values must be x / (1 - p), " << what;
      EXPECT_NEAR(dropped / static_cast<double>(y.numel()), p, 0.01) << what;
      EXPECT_EQ(same_as_previous_row, 0) << "rows share one mask, " << what;
      if (dt == DType::f64) mask64 = mask;
      else EXPECT_EQ(mask, mask64) << "float32 and float64 must draw the same mask, " << what;
    }
  }
}

TEST(OpHarnessDropout, MaskDependsOnSeedAndStepOnly) {
  OpCase c = dropout_case(0.5, rowed("X", 8, 0.5, 1.5), 9);
  Rig r(c, DType::f64);
  auto mask = [&](Executor& ex) {
    ex.forward(r.batch, Mode::train);
    Mat y = to_mat(ex.value(r.y));
    return map(y, [](double v) { return v == 0.0 ? 0.0 : 1.0; }).v;
  };
  auto ex = r.executor();
  auto first = mask(*ex), second = mask(*ex);
  EXPECT_NE(first, second) << "the mask must change from one step to the next";
  EXPECT_EQ(mask(*r.executor()), first) << "same seed and step must give the same mask";
  ExecutorOptions other;
  other.seed = 99;
  EXPECT_NE(mask(*r.executor(other)), first) << "another seed must give another mask";
}

TEST(OpHarnessDropout, GradientIsDyTimesMask) {
  OpCase c = dropout_case(0.3, rowed("X", 5, 0.5, 1.5, true), 7);
  Rig r(c, DType::f64);
  auto ex = r.executor();
  ex->forward(r.batch, Mode::train);
  r.ps.zero_grad();
  ex->backward(r.loss);
  const Tensor x = r.ps["X"].value, w = r.ps[kWeight].value, g = r.ps["X"].grad, y = ex->value(r.y);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double m = y.at(i) / x.at(i);  // 0 or 1 / (1 - p)
    dropped += m == 0.0;
    EXPECT_NEAR(g.at(i), w.at(i) * m, 1e-14) << "element " << i;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, x.numel());
}

}  // namespace
}  // namespace sylva
