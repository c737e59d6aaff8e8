// The CPU's bf16 GEMM (ExecContext::gemm = Precision::bf16): operands
// rounded to bfloat16 to nearest even, products summed in float32. Each
// element is checked against two bounds derived from its own operands
// (u = 2^-8, bfloat16's unit roundoff; g = k·2^-24, float32's sum of k
// terms):
//   |c - Σ ã·b̃| <= g·(Σ|ã·b̃| + |c0|)                   (ã, b̃ the rounded operands)
//   |c - Σ a·b|  <= (2u + u²)·Σ|a·b| + g·(Σ|ã·b̃| + |c0|)  (the exact product)
// and the first must be tight enough that the unrounded float32 product
// breaks it somewhere: the operands really were rounded.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "support/test_util.h"
#include "sylva/backend/backend.h"
#include "sylva/core/bfloat16.h"

namespace sylva {
namespace {

struct Case {
  int64_t m, k, n;
};

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = cpu.precision_unsupported(Precision::bf16); !why.empty())
      GTEST_SKIP() << "no bf16 GEMMs on this CPU: " << why;
  }
  Backend& cpu = backend_for(Device::cpu());
};

// Element (i, j) of op(X) for X stored [rows x cols] row-major.
double at(const std::vector<float>& x, int64_t cols, bool t, int64_t i, int64_t j) {
  return t ? x[static_cast<size_t>(j * cols + i)] : x[static_cast<size_t>(i * cols + j)];
}
double rounded(double v) { return from_bf16(to_bf16(static_cast<float>(v))); }

void check(Backend& cpu, Case c, bool ta, bool tb, bool accumulate, bool b_in_bf16) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.k * 7 + c.n + ta * 2 + tb));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t ar = ta ? c.k : c.m, ac = ta ? c.m : c.k, br = tb ? c.n : c.k, bc = tb ? c.k : c.n;
  std::vector<float> a(static_cast<size_t>(ar * ac)), b(static_cast<size_t>(br * bc)), out(static_cast<size_t>(c.m * c.n));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : out) v = u(rng);
  const std::vector<float> c0 = out;
  std::vector<uint16_t> b16(b.size());
  to_bf16(b.data(), b16.data(), static_cast<int64_t>(b.size()));
  ir::Node mm;
  mm.op = ir::OpKind::MatMul;
  mm.attrs.trans_a = ta;
  mm.attrs.trans_b = tb;
  const MatView in[2] = {{a.data(), ar, ac, DType::f32},
                         b_in_bf16 ? MatView{b16.data(), br, bc, DType::bf16} : MatView{b.data(), br, bc, DType::f32}};
  ExecContext ctx;
  ctx.gemm = Precision::bf16;
  cpu.run({mm, in, {out.data(), c.m, c.n, DType::f32}, ctx, accumulate});

  const double uu = std::ldexp(1.0, -8), g = static_cast<double>(c.k) * std::ldexp(1.0, -24) * 1.01;
  int64_t over_rounded = 0, unrounded_breaks = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double exact = 0, exact_abs = 0, low = 0, low_abs = 0, f32 = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double x = at(a, ac, ta, i, p), y = at(b, bc, tb, p, j);
        exact += x * y;
        exact_abs += std::abs(x * y);
        low += rounded(x) * rounded(y);
        low_abs += std::abs(rounded(x) * rounded(y));
        f32 += static_cast<double>(static_cast<float>(x) * static_cast<float>(y));
      }
      const double start = accumulate ? c0[static_cast<size_t>(i * c.n + j)] : 0.0;
      const double got = out[static_cast<size_t>(i * c.n + j)];
      const double tight = g * (low_abs + std::abs(start));
      over_rounded += std::abs(got - (start + low)) > tight;
      EXPECT_LE(std::abs(got - (start + exact)), (2 * uu + uu * uu) * exact_abs + tight) << i << ", " << j;
      unrounded_breaks += std::abs((start + f32) - (start + low)) > tight;
    }
  EXPECT_EQ(over_rounded, 0) << "elements off the rounded operands' product by more than float32's sum allows";
  EXPECT_GT(unrounded_breaks, 0) << "the float32 product meets the bf16 bound everywhere: no rounding was seen";
}

TEST_F(Bf16Gemm, EveryLayoutRoundsItsOperandsAndSumsInFloat32) {
  for (Case c : {Case{1, 20, 16}, Case{5, 64, 48}, Case{37, 300, 130}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(testing::Message() << c.m << "x" << c.k << "x" << c.n << " ta " << ta << " tb " << tb
                                          << " accumulate " << accumulate);
          check(cpu, c, ta, tb, accumulate, false);
          check(cpu, c, ta, tb, accumulate, true);  // B already bfloat16, as a parameter's copy is
        }
}

TEST_F(Bf16Gemm, OneRowGetsTheBitsItGetsAmongOthers) {
  // A vertex's row must not depend on how many rows share its GEMM.
  const int64_t k = 96, n = 64, m = 9;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  ir::Node mm;
  mm.op = ir::OpKind::MatMul;
  ExecContext ctx;
  ctx.gemm = Precision::bf16;
  std::vector<float> all(static_cast<size_t>(m * n)), one(static_cast<size_t>(n));
  const MatView in[2] = {{a.data(), m, k, DType::f32}, {b.data(), k, n, DType::f32}};
  cpu.run({mm, in, {all.data(), m, n, DType::f32}, ctx});
  for (int64_t r = 0; r < m; ++r) {
    const MatView row[2] = {{a.data() + r * k, 1, k, DType::f32}, in[1]};
    cpu.run({mm, row, {one.data(), 1, n, DType::f32}, ctx});
    EXPECT_EQ(std::memcmp(one.data(), all.data() + r * n, static_cast<size_t>(n) * sizeof(float)), 0) << "row " << r;
  }
}

TEST_F(Bf16Gemm, ConvertsBothWays) {
  std::vector<float> x = {1.0f, -2.5f, 3.14159f, 1e-40f}, back(x.size());
  std::vector<uint16_t> y(x.size());
  cpu.convert({x.data(), 2, 2, DType::f32}, {y.data(), 2, 2, DType::bf16});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], to_bf16(x[i])) << i;
  cpu.convert({y.data(), 2, 2, DType::bf16}, {back.data(), 2, 2, DType::f32});
  EXPECT_EQ(back[2], from_bf16(to_bf16(3.14159f)));
  EXPECT_NE(test::error_of([&] { cpu.convert({x.data(), 2, 2, DType::f32}, {y.data(), 1, 4, DType::bf16}); }).find("convert"), std::string::npos);
}

TEST_F(Bf16Gemm, BfloatOperandsNeedAFloat32Output) {
  std::vector<double> a(4, 1.0), out(4);
  std::vector<uint16_t> b(4, to_bf16(1.0f));
  ir::Node mm;
  mm.op = ir::OpKind::MatMul;
  const MatView in[2] = {{a.data(), 2, 2, DType::f64}, {b.data(), 2, 2, DType::bf16}};
  const std::string e = test::error_of([&] { cpu.run({mm, in, {out.data(), 2, 2, DType::f64}, ExecContext{}}); });
  EXPECT_NE(e.find("float32 output"), std::string::npos) << e;
}

}  // namespace
}  // namespace sylva
