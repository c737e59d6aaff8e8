// ExecutorOptions::precision: bf16 GEMMs read bfloat16 copies of the
// parameters (and of the fixed values computed from them) that follow the
// float32 masters; everything else is float32's; what cannot run bf16 is
// refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "support/cell_model.h"
#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int kVocab = 11, kD = 6, kH = 5;

// A chain cell whose two matmuls share their left operand (the pulled x):
// IOS merges them into one over [W1 | W2], a fixed value computed once per
// minibatch, which a bf16 GEMM reads through its own bfloat16 copy.
struct Model {
  ParameterSet ps;
  Program p;
  Symbol hs, loss;
  explicit Model(DType dtype = DType::f32, bool with_matmuls = true) : ps(dtype, 3), p(dtype) {
    ps.add("E", {kVocab, kD}, Init::uniform(-1, 1));
    ps.add("W1", {kD, kH}, Init::uniform(-0.5, 0.5));
    ps.add("W2", {kD, kH}, Init::uniform(-0.5, 0.5));
    ps.add("U", {kH, kH}, Init::uniform(-0.5, 0.5));
    VertexFunction f("cell", kH, dtype);
    Symbol x = f.pull(kD);
    Symbol h;
    if (with_matmuls) {
      h = tanh(matmul(x, f.param(ps["W1"])) + matmul(f.gather(0), f.param(ps["U"]))) *
          sigmoid(matmul(x, f.param(ps["W2"])));
    } else {
      h = tanh(slice(x, 0, kH) + f.gather(0));
    }
    f.scatter(h);
    f.push(h);
    hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = sum(hs * hs);
  }
};

std::vector<InputGraph> chains() {
  std::vector<InputGraph> graphs;
  std::mt19937_64 rng(8);
  for (int s = 0; s < 4; ++s) {
    graphs.push_back(test::random_tree(rng, 3 + 2 * s, 1, false, "chain " + std::to_string(s)));
    std::vector<int32_t> x(static_cast<size_t>(graphs.back().num_vertices()));
    for (size_t v = 0; v < x.size(); ++v) x[v] = static_cast<int32_t>((v * 7 + static_cast<size_t>(s)) % kVocab);
    graphs.back().set_ids("x", x);
  }
  return graphs;
}

ExecutorOptions with(Precision p) {
  ExecutorOptions o;
  o.precision = p;
  return test::on_test_device(o);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
// The same value: its bits, or on CUDA (whose reductions may order their
// sums otherwise from run to run) to rounding.
bool same_value(double a, double b) {
  return test::test_device() == "cuda" ? std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)) : same_bits(a, b);
}

class Bf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::precision_unsupported(Precision::bf16); !why.empty())
      GTEST_SKIP() << "no bf16 GEMMs here: " << why;
  }
};

TEST(Precision, NamesParseAndShowInTheOptionsTree) {
  EXPECT_EQ(precision_named("bf16"), Precision::bf16);
  EXPECT_EQ(precision_named("fp32"), Precision::fp32);
  const std::string e = test::error_of([] { precision_named("fp16"); });
  EXPECT_NE(e.find("fp32 or bf16"), std::string::npos) << e;
  ExecutorOptions o;
  o.precision = Precision::bf16;
  EXPECT_NE(o.to_text().find("numerics: precision bf16"), std::string::npos) << o.to_text();
  EXPECT_NE(ExecutorOptions{}.to_text().find("precision fp32"), std::string::npos);
}

TEST(Precision, Bf16RefusesAFloat64Program) {
  Model m(DType::f64);
  const std::string e = test::error_of([&] { Executor ex(m.p, m.ps, with(Precision::bf16)); });
  EXPECT_NE(e.find("float64"), std::string::npos) << e;
  EXPECT_NE(e.find("bf16"), std::string::npos) << e;
}

// The CPU's kernels under another name, without bf16 GEMMs.
class NoBf16Backend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  std::string name() const override { return "plain"; }
  bool supports(ir::OpKind op) const override { return cpu_.supports(op); }
  void run(const KernelArgs& a) override { cpu_.run(a); }
  void copy_rows(MatView s, std::span<const int32_t> si, MatView d, std::span<const int32_t> di) override {
    cpu_.copy_rows(s, si, d, di);
  }
  void add_rows(MatView s, std::span<const int32_t> si, MatView d, std::span<const int32_t> di) override {
    cpu_.add_rows(s, si, d, di);
  }
  void fill_zero(MatView d) override { cpu_.fill_zero(d); }
  void accumulate(MatView s, MatView d) override { cpu_.accumulate(s, d); }
  void set_threads(int threads) override { cpu_.set_threads(threads); }

 private:
  Backend& cpu_ = backend_for(Device::cpu());
};

TEST(Precision, Bf16RefusesABackendWithoutBf16Gemms) {
  Model m;
  NoBf16Backend plain;
  ExecutorOptions o;
  o.backend = &plain;
  o.precision = Precision::bf16;
  const std::string e = test::error_of([&] { Executor ex(m.p, m.ps, o); });
  EXPECT_NE(e.find("precision bf16 is not available: the plain backend has no bf16 GEMMs"), std::string::npos) << e;
  o.precision = Precision::fp32;
  EXPECT_NO_THROW(Executor(m.p, m.ps, o));
}

TEST_F(Bf16, OnlyGemmsChange) {
  const std::vector<InputGraph> graphs = chains();
  const GraphBatch b = GraphBatch::of(graphs);
  double loss[2][2];  // [with matmuls][precision]
  for (bool mm : {false, true})
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      Model m(DType::f32, mm);
      Executor ex(m.p, m.ps, with(p));
      ex.forward(b, Mode::train);
      loss[mm][p == Precision::bf16] = ex.scalar(m.loss);
    }
  EXPECT_TRUE(same_value(loss[0][0], loss[0][1])) << loss[0][0] << " vs " << loss[0][1] << ": no GEMM, same bits";
  EXPECT_FALSE(same_bits(loss[1][0], loss[1][1])) << "the GEMMs did not run in bf16";
  EXPECT_NEAR(loss[1][1], loss[1][0], 2e-2 * std::abs(loss[1][0]));
}

// A loop of the caller's changes the master weights without saying so:
// the next forward's GEMMs read copies of the new values, both of the
// parameters and of the fixed value IOS concatenates from them, and give
// the bits a new executor gives.
TEST_F(Bf16, CopiesFollowTheMasterWeights) {
  const std::vector<InputGraph> graphs = chains();
  const GraphBatch b = GraphBatch::of(graphs);
  for (bool ios : {true, false}) {
    SCOPED_TRACE(ios ? "ios" : "no ios");
    Model m;
    ExecutorOptions o = with(Precision::bf16);
    if (!ios) o = o.without(Optimisation::ios);
    Executor ex(m.p, m.ps, o);
    if (ios) {
      const std::string plan = ex.vertex_plan(m.hs).to_text();
      ASSERT_NE(plan.find("concat"), std::string::npos) << "IOS did not merge the two matmuls of x:\n" << plan;
    }
    ex.forward(b, Mode::train);
    const double before = ex.scalar(m.loss);
    for (const char* w : {"W1", "W2", "U"}) {
      Tensor& v = m.ps[w].value;
      for (int64_t i = 0; i < v.numel(); ++i) v.set(i, v.at(i) * 1.5 - 0.01);
    }
    ex.forward(b, Mode::train);
    const double after = ex.scalar(m.loss);
    Executor fresh(m.p, m.ps, o);
    fresh.forward(b, Mode::train);
    EXPECT_FALSE(same_bits(before, after));
    EXPECT_TRUE(same_value(after, fresh.scalar(m.loss))) << after << " vs a new executor's " << fresh.scalar(m.loss);
  }
}

TEST_F(Bf16, GradientsLandInTheFloat32Masters) {
  const std::vector<InputGraph> graphs = chains();
  const GraphBatch b = GraphBatch::of(graphs);
  Model m;
  const auto grads = [&](Precision p) {
    Executor ex(m.p, m.ps, with(p));
    ex.forward(b, Mode::train);
    m.ps.zero_grad();
    ex.backward(m.loss);
    std::vector<Tensor> g;
    for (Parameter* prm : m.ps.all()) g.push_back(prm->grad.clone());
    return g;
  };
  const std::vector<Tensor> want = grads(Precision::fp32), got = grads(Precision::bf16);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k].dtype(), DType::f32);
    EXPECT_LE(test::relative_error(got[k], want[k]), 5e-2) << m.ps.all()[k]->name;
    EXPECT_GT(test::relative_error(got[k], want[k]), 0.0) << m.ps.all()[k]->name;
  }
}

// bf16 GEMMs (ExecutorOptions::precision): batching changes no vertex's
// value. A row of F's output is computed from that vertex's inputs alone,
// so Bfs and Serial give every vertex the same bits, with dropout on (on
// the CPU and the sim device; on CUDA to rounding); the
// loss and the gradients sum over vertices in each policy's order, so they
// agree to float32's rounding of those sums. Every optimisation is on.
TEST_F(Bf16, BfsAndSerialGiveEveryVertexTheSameBits) {
  using Cell = test::CellModel;
  std::mt19937_64 rng(77);
  for (int slots : {3, 0}) {
    Cell m(slots, 0.25, DType::f32);
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<InputGraph> graphs;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int s = 0; s < n; ++s) {
        const std::string src = "bf16 " + std::to_string(trial) + "." + std::to_string(s);
        graphs.push_back(slots ? test::random_tree(rng, 1 + static_cast<int>(rng() % 30), 3, true, src)
                               : test::random_dag(rng, 1 + static_cast<int>(rng() % 25), 4, src));
        test::attach_random_ids(rng, graphs.back(), Cell::kVocab, Cell::kClasses);
      }
      const GraphBatch b = GraphBatch::of(graphs);
      Tensor hs[2];
      double loss[2];
      std::vector<Tensor> grads[2];
      for (int k = 0; k < 2; ++k) {
        ExecutorOptions o{.policy = k ? BatchingPolicy::Serial : BatchingPolicy::Bfs, .seed = 5,
                          .precision = Precision::bf16};
        Executor ex(m.p, m.ps, test::on_test_device(o));
        ex.forward(b, Mode::train);
        hs[k] = ex.value(m.hs);
        loss[k] = ex.scalar(m.loss);
        m.ps.zero_grad();
        ex.backward(m.loss);
        for (Parameter* prm : m.ps.all()) grads[k].push_back(prm->grad.clone());
      }
      const std::string what = (slots ? "tree trial " : "dag trial ") + std::to_string(trial);
      ASSERT_EQ(hs[0].nbytes(), hs[1].nbytes()) << what;
      if (test::test_device() == "cuda")  // cuBLAS may order a row's sums by the GEMM's shape: rounding apart
        EXPECT_LE(test::relative_error(hs[0], hs[1]), 1e-5) << what;
      else
        EXPECT_EQ(std::memcmp(hs[0].raw(), hs[1].raw(), hs[0].nbytes()), 0) << what << ": a vertex's value depends on the batching";
      EXPECT_LE(std::abs(loss[0] - loss[1]), 1e-5 * std::max(1.0, std::abs(loss[1]))) << what;
      for (size_t k = 0; k < grads[0].size(); ++k)
        EXPECT_LE(test::relative_error(grads[0][k], grads[1][k]), 1e-4) << what << " param " << m.ps.all()[k]->name;
    }
  }
}

}  // namespace
}  // namespace sylva
