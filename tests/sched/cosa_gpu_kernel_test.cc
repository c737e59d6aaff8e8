// The GPU kernel generator's plans, run by the host emulation of the same
// template text the GPU compiles, against the plain convolution: CoSA's
// mappings and random valid ones of the shipped H200 and of a small GPU,
// in float64 and float32; the errors for mappings the kernel cannot run.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_gpu.h"
#include "sylva/sched/cosa_gpu_kernel.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

namespace sylva::cosa {
namespace {

using test::error_of;

// 4 SMs of 2 warps x 4 lanes, 64 registers per SM (6 per thread), 1 KiB of shared memory.
Arch small_gpu() {
  GpuFacts f;
  f.name = "small";
  f.sms = 4;
  f.warps_per_sm = 2;
  f.lanes = 4;
  f.registers_per_sm = 64;
  f.shared_bytes = 1024;
  f.l2_bytes = 1 << 20;
  f.clock_ghz = 1;
  f.dram_bytes_per_second = 1e11;
  return gpu_arch(f);
}

// Largest |emulated - reference| relative to the largest |reference|.
template <class T>
double emulated_error(const GpuConvPlan& plan) {
  const Problem& p = plan.problem;
  std::mt19937_64 rng(3);
  const std::vector<T> w = test::uniform<T>(static_cast<size_t>(weight_size(p)), rng);
  const std::vector<T> in = test::uniform<T>(static_cast<size_t>(input_size(p)), rng);
  std::vector<T> got(static_cast<size_t>(output_size(p)), T(0)), want(got.size());
  emulate_gpu_conv(plan, w.data(), in.data(), got.data());
  reference_conv(p, w.data(), in.data(), want.data());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return err / scale;
}

const std::vector<Problem>& layers() {
  static const std::vector<Problem> l{
      test::conv_layer({3, 3, 6, 6, 4, 8, 2}),           // 3x3, batch 2
      test::conv_layer({3, 3, 4, 5, 6, 4, 1}, 2),        // stride 2, P != Q
      test::conv_layer({3, 1, 5, 4, 3, 6, 1}, 1, 2),     // rectangular kernel, dilation 2
      test::conv_layer({3, 3, 4, 4, 2, 4, 2}, 2, 2),     // stride and dilation 2
      test::conv_layer({1, 1, 7, 7, 16, 12, 1}),         // pointwise
      gemm_problem(12, 20, 18),               // a GEMM
  };
  return l;
}

TEST(CosaGpuKernel, CosasMappingsRunAsThePlainConvolution) {
  for (const Arch& a : {h200_arch(), small_gpu()})
    for (const Problem& p : layers()) {
      const Result r = schedule(p, a, gpu_mapspace(a), {}, cpu_limits());
      const GpuConvPlan plan = gpu_conv_plan(p, r.mapping, a);
      EXPECT_LT(emulated_error<double>(plan), 1e-12) << a.name << "\n" << describe(plan);
      EXPECT_LT(emulated_error<float>(plan), 1e-5) << a.name << "\n" << describe(plan);
    }
}

// Random valid mappings in three mapspaces (staging both tensors, the
// inputs only, the weights only): every one the plan accepts runs as the
// plain convolution, and the draws cover split reductions, several
// threads and blocks, and unstaged tensors.
TEST(CosaGpuKernel, RandomValidMappingsRunAsThePlainConvolution) {
  std::mt19937_64 rng(7);
  int plans = 0, atomic = 0, threaded = 0, unstaged = 0, refused = 0;
  for (const Arch& a : {h200_arch(), small_gpu()})
    for (int variant = 0; variant < 3; ++variant) {
      Mapspace ms = gpu_mapspace(a);
      if (variant == 1) ms.keep[1][Weights] = false;
      if (variant == 2) ms.keep[1][Inputs] = false;
      for (const Problem& p : layers())
        for (int draw = 0, kept = 0; draw < 400 && kept < 6; ++draw) {
          const Mapping m = random_mapping(p, a, ms, rng);
          if (!fits_fanout(m, a)) continue;
          GpuConvPlan plan;
          try {
            plan = gpu_conv_plan(p, m, a);
          } catch (const Error& e) {
            ++refused;  // a capacity the draw overflows: named in the message
            EXPECT_TRUE(std::string(e.what()).find("level ") != std::string::npos) << e.what();
            continue;
          }
          ++kept;
          ++plans;
          atomic += plan.atomic;
          threaded += plan.threads_per_block > 1 && plan.blocks > 1;
          unstaged += !plan.stage_weights || !plan.stage_inputs;
          ASSERT_LT(emulated_error<double>(plan), 1e-12) << a.name << " " << p.name << "\n" << describe(plan);
          ASSERT_LT(emulated_error<float>(plan), 1e-5) << a.name << " " << p.name << "\n" << describe(plan);
        }
    }
  EXPECT_GE(plans, 120);
  EXPECT_GT(atomic, 10);
  EXPECT_GT(threaded, 10);
  EXPECT_GT(unstaged, 10);
  EXPECT_GT(refused, 0) << "the small GPU's capacities should refuse some draws";
}

TEST(CosaGpuKernel, ThePlanFollowsTheMappingsLevels) {
  const Arch a = h200_arch();
  const Problem p = test::conv_layer({3, 3, 8, 8, 4, 16, 1});
  Mapping m = blank_mapping(a, gpu_mapspace(a));
  m.levels[0].temporal[K] = 2;  // registers: 2 x 2 outputs
  m.levels[0].temporal[Q] = 2;
  m.levels[0].temporal[R] = 3;
  m.levels[1].spatial[Q] = 4;  // 4 x 2 threads
  m.levels[1].spatial[C] = 2;
  m.levels[1].temporal[S] = 3;
  m.levels[1].temporal[P] = 2;
  m.levels[2].spatial[K] = 8;  // 8 x 4 blocks
  m.levels[2].spatial[P] = 4;
  m.levels[3].temporal[C] = 2;
  const GpuConvPlan plan = gpu_conv_plan(p, m, a);
  EXPECT_EQ(plan.blocks, 32);
  EXPECT_EQ(plan.threads_per_block, 8);
  EXPECT_EQ(plan.accumulators, 4);
  EXPECT_TRUE(plan.atomic) << "threads split C";
  ASSERT_EQ(plan.outer.size(), 1u);
  EXPECT_EQ(plan.outer[0].dim, C);
  EXPECT_EQ(plan.outer[0].stride, 2);  // inside it: the threads' C2
  EXPECT_EQ(plan.tile, (std::array<int64_t, kDims>{3, 3, 2, 8, 2, 2, 1}));
  EXPECT_EQ(plan.tile_input, (std::array<int64_t, 2>{4, 10}));
  EXPECT_EQ(plan.smem_weights, 2 * 2 * 3 * 3);
  EXPECT_EQ(plan.smem_inputs, 2 * 4 * 10);
  EXPECT_EQ(plan.shared_bytes(4), 4 * (36 + 80));
  EXPECT_CONTAINS(describe(plan), "32 blocks x 8 threads, 2 steps per block, outputs added atomically");
  EXPECT_LT(emulated_error<double>(plan), 1e-12);
}

TEST(CosaGpuKernel, MappingsItCannotRunNameTheLevelAndTensor) {
  const Arch a = small_gpu();
  const Problem p = test::conv_layer({3, 3, 8, 8, 4, 16, 1});
  Mapping regs = blank_mapping(a, gpu_mapspace(a));
  regs.levels[0].temporal[K] = 16;  // 16 accumulators: the small GPU's threads have 6 registers
  regs.levels[3].temporal = {3, 3, 8, 8, 4, 1, 1};
  EXPECT_CONTAINS(error_of([&] { gpu_conv_plan(p, regs, a); }), "level Registers, tensor Outputs");

  Mapping smem = blank_mapping(a, gpu_mapspace(a));
  smem.levels[1].temporal = {3, 3, 8, 8, 4, 16, 1};  // the whole layer staged in 256 words
  EXPECT_CONTAINS(error_of([&] { gpu_conv_plan(p, smem, a); }), "level SharedMemory, tensors Weights (576 words) + Inputs (400 words)");

  Mapping bad = blank_mapping(a, gpu_mapspace(a));
  bad.levels[3].temporal = {3, 3, 8, 8, 4, 8, 1};  // K: 8 of 16
  EXPECT_CONTAINS(error_of([&] { gpu_conv_plan(p, bad, a); }), "K");

  const Arch cpu = cpu_arch(test::two_core_facts());
  Mapping on_cpu = blank_mapping(cpu, keep_everything(cpu));
  on_cpu.levels.back().temporal = p.bounds;
  EXPECT_CONTAINS(error_of([&] { gpu_conv_plan(p, on_cpu, cpu); }), "is not gpu_arch's levels");
}

TEST(CosaGpuKernel, TheSourceCarriesThePlanAndOneEntryPoint) {
  const Arch a = h200_arch();
  const Problem p = layers()[0];
  const GpuConvPlan plan = gpu_conv_plan(p, schedule(p, a, gpu_mapspace(a), {}, cpu_limits()).mapping, a);
  const std::string src = gpu_conv_source(plan, GpuReal::f32), name = gpu_conv_kernel_name(plan, GpuReal::f32);
  EXPECT_CONTAINS(src, "extern \"C\" __global__ void __launch_bounds__(" +
                           std::to_string(plan.threads_per_block) + ") " + name + "(const float*");
  EXPECT_CONTAINS(src, "struct ConvPlan");
  EXPECT_NE(name, gpu_conv_kernel_name(plan, GpuReal::f64));
  GpuConvPlan other = gpu_conv_plan(layers()[1], schedule(layers()[1], a, gpu_mapspace(a), {}, cpu_limits()).mapping, a);
  EXPECT_NE(name, gpu_conv_kernel_name(other, GpuReal::f32));
}

}  // namespace
}  // namespace sylva::cosa
