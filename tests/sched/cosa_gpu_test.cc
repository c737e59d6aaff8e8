// A GPU as a CoSA architecture: the levels and fan-outs gpu_arch builds from
// an H200's facts, the shipped H200 file (the same architecture), bad
// facts, the fallback where no GPU is visible, and CoSA scheduling a layer
// on it.
#include "sylva/sched/cosa_gpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"
#include "sylva/core/log.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"

namespace sylva::cosa {
namespace {

// NVIDIA's H200 SXM: 132 SMs, 64 Ki registers and 227 KiB of shared memory
// (per block, opt-in) per SM, 50 MiB of L2 (the GH100 of the H100 SXM),
// 1.98 GHz boost clock, 4.8 TB/s of HBM3e.
GpuFacts h200_facts() {
  GpuFacts f;
  f.name = "h200";
  f.sms = 132;
  f.registers_per_sm = 65536;
  f.shared_bytes = 227 * 1024;
  f.l2_bytes = 50 * 1024 * 1024;
  f.clock_ghz = 1.98;
  f.dram_bytes_per_second = 4.8e12;
  return f;
}

TEST(CosaGpu, LevelsInstancesAndFanouts) {
  const Arch a = gpu_arch(h200_facts());
  EXPECT_EQ(a.mac_instances, 132 * 128);
  const std::vector<std::string> names{"Registers", "SharedMemory", "L2", "DRAM"};
  const std::vector<int64_t> instances{132 * 128, 132, 1, 1};
  ASSERT_EQ(a.levels.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(a.levels[i].name, names[i]);
    EXPECT_EQ(a.levels[i].instances, instances[i]) << names[i];
  }
  EXPECT_EQ(a.levels[0].entries, 64);  // min(255, 65536 / 128) less a quarter, at most 64
  GpuFacts few = h200_facts();
  few.registers_per_sm = 8192;  // 64 per thread: less a quarter, 48
  EXPECT_EQ(gpu_arch(few).levels[0].entries, 48);
  EXPECT_EQ(a.levels[1].entries, 227 * 256);
  EXPECT_EQ(a.levels[2].entries, 50 * 256 * 1024);
  EXPECT_TRUE(a.levels[3].dram);
  EXPECT_NEAR(a.levels[3].read_bandwidth, 4.8e12 / 1.98e9 / 4, 1e-9);  // words per SM cycle
  EXPECT_NEAR(a.levels[2].read_bandwidth, 2 * a.levels[3].read_bandwidth, 1e-9);
  EXPECT_EQ(a.levels[1].read_bandwidth, 32);
}

TEST(CosaGpu, TheShippedH200IsTheSameArchitecture) {
  const Arch shipped = h200_arch();
  EXPECT_EQ(arch_yaml(shipped), arch_yaml(gpu_arch(h200_facts())))
      << "src/sched/arch/h200.yaml should hold (below its comment):\n"
      << arch_yaml(gpu_arch(h200_facts()));
  EXPECT_EQ(shipped.name, "h200");
}

TEST(CosaGpu, BadFactsAndNoGpu) {
  GpuFacts f = h200_facts();
  f.shared_bytes = 0;
  EXPECT_CONTAINS(test::error_of([&] { gpu_arch(f); }), "gpu_arch 'h200': every fact must be positive");
  EXPECT_CONTAINS(test::error_of([&] { gpu_arch(f); }), "shared 0 B");
  std::vector<std::string> warnings;  // the fallback is logged (this handler replaces the one failing on warnings)
  set_log_handler([&](LogLevel level, std::string_view msg) {
    if (level >= LogLevel::warning) warnings.emplace_back(msg);
  });
  std::string from;
  const Arch a = this_gpu_arch(&from);
  if (from.rfind("CUDA device 0", 0) == 0) GTEST_SKIP() << "a GPU is visible: " << from;
  EXPECT_CONTAINS(from, "the shipped H200 (src/sched/arch/h200.yaml); [cosa] no CUDA device 0");
  EXPECT_EQ(arch_yaml(a), arch_yaml(h200_arch()));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_CONTAINS(warnings[0], "[cosa] the GPU's architecture from " + from);
}

// A small layer: on ResNet-50's own layers the MIP takes seconds on this
// architecture's 16896-way fan-out (docs/notes/cosa-kernels.md).
TEST(CosaGpu, CosaSchedulesALayerOnTheH200) {
  const Arch a = h200_arch();
  Problem p;
  p.name = "small";
  p.bounds = {3, 3, 8, 8, 16, 32, 1};  // R S P Q C K N
  const Result r = schedule(p, a, keep_everything(a));
  check_mapping(r.mapping, p, a);
  EXPECT_TRUE(r.evaluation.valid) << r.evaluation.why;
  EXPECT_GE(r.evaluation.cycles, p.macs() / a.mac_instances);
}

}  // namespace
}  // namespace sylva::cosa
