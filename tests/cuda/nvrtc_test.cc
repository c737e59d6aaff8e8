// NVRTC compilation of generated fused kernels and the kernel cache. NVRTC
// needs no GPU, so these run on every machine built with CUDA.
#include "../../src/backend/cuda/nvrtc_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../../src/backend/cuda/fused_codegen.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/core/log.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_gpu.h"
#include "sylva/sched/cosa_gpu_kernel.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

namespace sylva::cuda {
namespace {

using ir::OpKind;

// One program with every fusible op: the source of each must compile.
FusedProgram every_op() {
  FusedProgram p;
  p.name = "every-op";
  const auto add = [&](OpKind op, std::vector<int32_t> args, int64_t cols, int32_t out = -1) {
    p.steps.push_back(fused_step(op, std::move(args), cols, out));
    return static_cast<int32_t>(p.steps.size() - 1);
  };
  const int32_t a = add(OpKind::Add, {-1, -2}, 4), b = add(OpKind::Sub, {a, -2}, 4), c = add(OpKind::Mul, {a, b}, 4);
  const int32_t t = add(OpKind::Tanh, {c}, 4), s = add(OpKind::Sigmoid, {t}, 4), r = add(OpKind::Relu, {s}, 4);
  const int32_t e = add(OpKind::Exp, {r}, 4), l = add(OpKind::Log, {e}, 4), sc = add(OpKind::Scale, {l}, 4);
  const int32_t g1 = add(OpKind::TanhGrad, {t, sc}, 4), g2 = add(OpKind::SigmoidGrad, {s, g1}, 4);
  const int32_t g3 = add(OpKind::ReluGrad, {r, g2}, 4), g4 = add(OpKind::LogGrad, {e, g3}, 4, 0);
  p.steps[static_cast<size_t>(sc)].alpha = 0.5;
  const int32_t sl = add(OpKind::Slice, {g4}, 2);
  p.steps[static_cast<size_t>(sl)].begin = 1;
  const int32_t cat = add(OpKind::Concat, {sl, -1}, 6);
  add(OpKind::Assemble, {cat, sl}, 6, 1);
  p.steps.back().offsets = {0, 3};
  return p;
}

TEST(Nvrtc, EveryFusibleOpCompilesInBothPrecisions) {
  NvrtcCache cache("");
  const std::vector<int64_t> cols{4, 4};
  for (DType t : {DType::f32, DType::f64}) {
    const FusedKernel k = fused_kernel_source(every_op(), t, cols);
    const auto cubin = cache.compile(k.source, "sm_90");
    ASSERT_TRUE(cubin);
    EXPECT_GT(cubin->size(), 1000u);
    EXPECT_EQ(cubin->substr(1, 3), "ELF");  // a CUBIN is an ELF image
    EXPECT_NE(cubin->find(k.kernel), std::string::npos) << "the entry point is not in the image";
  }
  EXPECT_EQ(cache.stats().compiles, 2);
}

// A group with more scratch than 48 KiB (dynamic shared memory, opted in at launch) compiles.
TEST(Nvrtc, AFusedGroupAbove48KiBOfScratchCompiles) {
  FusedProgram p;
  p.name = "wide";
  p.steps = {fused_step(OpKind::Tanh, {-1}, 20000), fused_step(OpKind::Exp, {0}, 20000, 0)};
  const std::vector<int64_t> cols{20000};
  const FusedKernel k = fused_kernel_source(p, DType::f32, cols, 227 * 1024);
  ASSERT_GT(k.shared_bytes, 48 * 1024);
  NvrtcCache cache("");
  EXPECT_NE(cache.compile(k.source, "sm_90")->find(k.kernel), std::string::npos);
}

TEST(Nvrtc, ASourceThatDoesNotCompileReportsNvrtcsLog) {
  NvrtcCache cache("");
  const std::string err =
      test::error_of([&] { cache.compile("extern \"C\" __global__ void k() { undefined(); }", "sm_90"); });
  EXPECT_CONTAINS(err, "[nvrtc] generated kernel does not compile for sm_90");
  EXPECT_CONTAINS(err, "undefined");
}

TEST(Nvrtc, TheCacheServesFromMemoryThenFromDiskAndRecompilesDamagedEntries) {
  test::TempDir dir;
  const std::string root = (dir.path / "kernels").string();
  const std::vector<int64_t> cols{4, 4};
  const FusedKernel k = fused_kernel_source(every_op(), DType::f32, cols);
  std::string first;
  {
    NvrtcCache cache(root);
    first = *cache.compile(k.source, "sm_90");
    EXPECT_EQ(*cache.compile(k.source, "sm_90"), first);
    EXPECT_EQ(cache.stats().compiles, 1);
    EXPECT_EQ(cache.stats().memory_hits, 1);
    EXPECT_TRUE(std::filesystem::exists(cache.entry_path(k.source, "sm_90")));
    EXPECT_NE(cache.entry_path(k.source, "sm_90"), cache.entry_path(k.source, "sm_80"));  // keyed by arch
  }
  {
    NvrtcCache cache(root);  // a new process, as far as the cache knows
    EXPECT_EQ(*cache.compile(k.source, "sm_90"), first);
    EXPECT_EQ(cache.stats().disk_hits, 1);
    EXPECT_EQ(cache.stats().compiles, 0);
    // Damage the entry: it is compiled again, with a warning, and rewritten.
    const std::string path = cache.entry_path(k.source, "sm_90");
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    bytes[bytes.size() / 2] ^= 0x55;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  NvrtcCache cache(root);
  std::vector<std::string> warnings;
  LogHandler previous = set_log_handler([&](LogLevel level, std::string_view m) {
    if (level >= LogLevel::warning) warnings.emplace_back(m);
  });
  const std::string again = *cache.compile(k.source, "sm_90");
  set_log_handler(previous);
  EXPECT_EQ(again, first);
  EXPECT_EQ(cache.stats().damaged, 1);
  EXPECT_EQ(cache.stats().compiles, 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_CONTAINS(warnings[0], "is damaged (the payload does not match its hash); compiling again");
  EXPECT_EQ(*NvrtcCache(root).compile(k.source, "sm_90"), first);  // the rewritten entry is whole
}

cosa::Problem conv3x3_layer() {
  cosa::Problem p;
  p.name = "conv3x3";
  p.bounds = {3, 3, 14, 14, 32, 64, 1};
  return p;
}

// CoSA's GPU convolutions (sched/cosa_gpu_kernel.h): CoSA's mapping of a
// 3x3 layer and of a GEMM on the H200, and random valid mappings (split
// reductions, unstaged tensors among them), compile in both precisions.
TEST(Nvrtc, CosaConvolutionKernelsCompile) {
  using namespace cosa;
  const Arch a = h200_arch();
  const Mapspace ms = gpu_mapspace(a);
  std::vector<GpuConvPlan> plans;
  for (const Problem& p : {gemm_problem(64, 96, 80), conv3x3_layer()}) {
    plans.push_back(gpu_conv_plan(p, schedule(p, a, ms, {}, cpu_limits()).mapping, a));
    std::mt19937_64 rng(11);
    for (int kept = 0, draw = 0; kept < 2 && draw < 200; ++draw) {
      Mapspace some = ms;
      some.keep[1][draw % 2 ? Weights : Inputs] = false;
      const Mapping m = random_mapping(p, a, some, rng);
      if (!fits_fanout(m, a)) continue;
      try {
        plans.push_back(gpu_conv_plan(p, m, a));
        ++kept;
      } catch (const Error&) {  // over a capacity: another draw
      }
    }
  }
  ASSERT_EQ(plans.size(), 6u);
  NvrtcCache cache("");
  for (const GpuConvPlan& plan : plans)
    for (GpuReal real : {GpuReal::f32, GpuReal::f64}) {
      const auto cubin = cache.compile(gpu_conv_source(plan, real), "sm_90");
      EXPECT_EQ(cubin->substr(1, 3), "ELF");
      EXPECT_NE(cubin->find(gpu_conv_kernel_name(plan, real)), std::string::npos) << describe(plan);
    }
}

}  // namespace
}  // namespace sylva::cuda
