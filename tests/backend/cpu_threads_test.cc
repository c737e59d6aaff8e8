// The CPU backend on two threads: float32 GEMMs (whose transposed-B case
// Sylva splits by columns itself) and fused groups (split by rows) give
// what the plain loops give, in every layout, with and without
// accumulation, at sizes on both sides of the splitting thresholds.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sylva/backend/backend.h"

namespace sylva {
namespace {

using ir::OpKind;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& e : v) e = u(rng);
  return v;
}

// Restores one thread whatever a test did.
struct Threads {
  Backend& cpu = backend_for(Device::cpu());
  explicit Threads(int n) { cpu.set_threads(n); }
  ~Threads() { cpu.set_threads(1); }
};

TEST(CpuThreads, MatMulOnTwoThreadsMatchesThePlainProduct) {
  const Threads two(2);
  for (const int64_t n : {23, 300, 1000})  // below, above (unevenly: 160 + 140) and well above the column split's 2 x 128
    for (int layout = 0; layout < 8; ++layout) {
      const bool ta = layout & 1, tb = layout & 2, acc = layout & 4;
      const int64_t m = 37, k = 150;
      const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 1), b = random_floats(
                                                                                      static_cast<size_t>(k * n), 2);
      std::vector<float> c = random_floats(static_cast<size_t>(m * n), 3);
      const std::vector<float> c0 = c;
      ir::Node node;
      node.op = OpKind::MatMul;
      node.attrs.trans_a = ta;
      node.attrs.trans_b = tb;
      ExecContext ctx;
      const MatView in[] = {{const_cast<float*>(a.data()), ta ? k : m, ta ? m : k, DType::f32},
                            {const_cast<float*>(b.data()), tb ? n : k, tb ? k : n, DType::f32}};
      two.cpu.run({node, in, {c.data(), m, n, DType::f32}, ctx, acc});
      double worst = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = acc ? c0[static_cast<size_t>(i * n + j)] : 0.0;
          for (int64_t p = 0; p < k; ++p)
            want += static_cast<double>(a[static_cast<size_t>(ta ? p * m + i : i * k + p)]) *
                    b[static_cast<size_t>(tb ? j * k + p : p * n + j)];
          worst = std::max(worst, std::abs(want - c[static_cast<size_t>(i * n + j)]));
        }
      EXPECT_LT(worst, 1e-4) << "n " << n << " trans_a " << ta << " trans_b " << tb << " accumulate " << acc;
    }
}

TEST(CpuThreads, AFusedGroupGivesTheSameBitsOnOneAndTwoThreads) {
  // sigmoid(X) * Y + X over R rows of 128 columns: 3 x 128 x R elements,
  // split over the threads from 2^15 elements on (R = 100 is below, 1000 above).
  for (const int64_t rows : {100, 1000}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(rows * 128), 4),
                             y = random_floats(static_cast<size_t>(rows * 128), 5);
    ir::FusedProgram p;
    p.steps.push_back(ir::fused_step(OpKind::Sigmoid, {-1}, 128));
    p.steps.push_back(ir::fused_step(OpKind::Mul, {0, -2}, 128));
    p.steps.push_back(ir::fused_step(OpKind::Add, {1, -1}, 128, 0));
    const MatView in[] = {{const_cast<float*>(x.data()), rows, 128, DType::f32},
                          {const_cast<float*>(y.data()), rows, 128, DType::f32}};
    std::vector<float> one(static_cast<size_t>(rows * 128)), two(one.size());
    {
      const Threads t(1);
      const MatView out[] = {{one.data(), rows, 128, DType::f32}};
      ASSERT_TRUE(t.cpu.run_fused(p, in, out, rows));
    }
    {
      const Threads t(2);
      const MatView out[] = {{two.data(), rows, 128, DType::f32}};
      ASSERT_TRUE(t.cpu.run_fused(p, in, out, rows));
    }
    EXPECT_EQ(one, two) << rows << " rows";
    for (size_t i = 0; i < one.size(); i += 97)
      EXPECT_NEAR(one[i], y[i] / (1 + std::exp(-x[i])) + x[i], 1e-5) << i;
  }
}

}  // namespace
}  // namespace sylva
