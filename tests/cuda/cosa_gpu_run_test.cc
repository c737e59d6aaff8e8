// CoSA's GPU convolutions on the GPU (graph/cosa_gpu_run.h): CoSA's
// mappings of the lent GPU's architecture and random valid ones, against
// the plain convolution on the host. Skipped, with the reason, where no
// GPU is visible (the host emulation of the same kernels is checked in
// tests/sched/cosa_gpu_kernel_test.cc everywhere).
#include <gtest/gtest.h>

#include <random>

#include "gpu.h"
#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/graph/cosa_gpu_run.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_gpu.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

namespace sylva::cosa {
namespace {

double gpu_error(const GpuConvPlan& plan) {
  const Problem& p = plan.problem;
  std::mt19937_64 rng(5);
  const std::vector<float> w = test::uniform<float>(static_cast<size_t>(weight_size(p)), rng);
  const std::vector<float> in = test::uniform<float>(static_cast<size_t>(input_size(p)), rng);
  std::vector<float> got(static_cast<size_t>(output_size(p))), want(got.size());
  const GpuRun run = run_gpu_conv(plan, w.data(), in.data(), got.data(), 2);
  EXPECT_EQ(run.seconds.size(), 2u);
  reference_conv(p, w.data(), in.data(), want.data());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return err / scale;
}

TEST(CosaGpuRun, CoSAsAndRandomMappingsRunAsThePlainConvolution) {
  if (const std::string why = test::no_gpu_reason(); !why.empty()) GTEST_SKIP() << why << test::kGpuTestsHint;
  const Arch a = this_gpu_arch();
  std::mt19937_64 rng(3);
  for (const Problem& p : {test::conv_layer({3, 3, 14, 14, 32, 64, 1}), test::conv_layer({3, 3, 7, 7, 64, 32, 2}, 2), gemm_problem(96, 128, 64),
                           test::conv_layer({1, 1, 28, 28, 64, 64, 1})}) {
    const GpuConvPlan cosa = gpu_conv_plan(p, schedule(p, a, gpu_mapspace(a), {}, cpu_limits()).mapping, a);
    EXPECT_LT(gpu_error(cosa), 1e-5) << describe(cosa);
    for (int kept = 0, draw = 0; kept < 4 && draw < 400; ++draw) {
      const Mapping m = random_mapping(p, a, gpu_mapspace(a), rng);
      if (!fits_fanout(m, a)) continue;
      GpuConvPlan plan;
      try {
        plan = gpu_conv_plan(p, m, a);
      } catch (const Error&) {
        continue;  // over a capacity
      }
      ++kept;
      EXPECT_LT(gpu_error(plan), 1e-5) << describe(plan);
    }
  }
}

}  // namespace
}  // namespace sylva::cosa
