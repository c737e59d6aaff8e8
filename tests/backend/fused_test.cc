// The CPU backend's fused kernel against the same math written out here
// (float64): slices as views and as outputs, broadcasting, concat,
// assemble, activations and their gradients, scale.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sylva/backend/backend.h"

namespace sylva {
namespace {

using ir::OpKind;

TEST(FusedKernel, CpuMatchesTheOpsOneByOne) {
  constexpr int64_t R = 7;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> X(R * 6), B(3), Y(R * 3);
  for (auto* v : {&X, &B, &Y})
    for (double& e : *v) e = u(rng);
  // Inputs: -1 = X [R, 6], -2 = B [1, 3] (broadcast), -3 = Y [R, 3].
  FusedProgram p;
  p.steps.push_back(fused_step(OpKind::Slice, {-1}, 3));            // 0: X[:, 3:6], a view
  p.steps[0].begin = 3;
  p.steps.push_back(fused_step(OpKind::Sigmoid, {0}, 3));           // 1
  p.steps.push_back(fused_step(OpKind::Add, {1, -2}, 3, 0));        // 2: out 0
  p.steps.push_back(fused_step(OpKind::Mul, {2, -3}, 3));           // 3
  p.steps.push_back(fused_step(OpKind::Concat, {3, -1}, 9, 1));     // 4: out 1
  p.steps.push_back(fused_step(OpKind::Assemble, {0, 3}, 6, 2));    // 5: out 2
  p.steps[5].offsets = {0, 3};
  p.steps.push_back(fused_step(OpKind::TanhGrad, {1, -3}, 3));      // 6
  p.steps.push_back(fused_step(OpKind::Scale, {6}, 3, 3));          // 7: out 3
  p.steps[7].alpha = 0.5;
  p.steps.push_back(fused_step(OpKind::Slice, {-1}, 2, 4));         // 8: out 4, a copy
  p.steps[8].begin = 1;
  std::vector<double> o0(R * 3), o1(R * 9), o2(R * 6), o3(R * 3), o4(R * 2);
  const MatView in[] = {{X.data(), R, 6, DType::f64}, {B.data(), 1, 3, DType::f64}, {Y.data(), R, 3, DType::f64}};
  const MatView out[] = {{o0.data(), R, 3, DType::f64}, {o1.data(), R, 9, DType::f64}, {o2.data(), R, 6, DType::f64},
                         {o3.data(), R, 3, DType::f64}, {o4.data(), R, 2, DType::f64}};
  ASSERT_TRUE(backend_for(Device::cpu()).run_fused(p, in, out, R));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      const double s = X[r * 6 + 3 + c], sig = 1 / (1 + std::exp(-s)), y = Y[r * 3 + c];
      const double added = sig + B[c], prod = added * y;
      EXPECT_NEAR(o0[r * 3 + c], added, 1e-12);
      EXPECT_NEAR(o1[r * 9 + c], prod, 1e-12);
      EXPECT_NEAR(o1[r * 9 + 3 + c], X[r * 6 + c], 0);
      EXPECT_NEAR(o1[r * 9 + 6 + c], X[r * 6 + 3 + c], 0);
      EXPECT_NEAR(o2[r * 6 + c], s, 0);
      EXPECT_NEAR(o2[r * 6 + 3 + c], prod, 1e-12);
      EXPECT_NEAR(o3[r * 3 + c], 0.5 * y * (1 - sig * sig), 1e-12);
      if (c < 2) {
        EXPECT_EQ(o4[r * 2 + c], X[r * 6 + 1 + c]);
      }
    }
}

TEST(FusedKernel, AnOpThatCannotBeFusedIsAnError) {
  FusedProgram p;
  p.steps.push_back(fused_step(OpKind::MatMul, {-1, -1}, 2, 0));
  std::vector<double> a(4), o(4);
  const MatView in[] = {{a.data(), 2, 2, DType::f64}};
  const MatView out[] = {{o.data(), 2, 2, DType::f64}};
  EXPECT_FALSE(ir::fusible(OpKind::MatMul));
  EXPECT_THROW(backend_for(Device::cpu()).run_fused(p, in, out, 2), Error);
}

}  // namespace
}  // namespace sylva
