// This CPU as a CoSA architecture: sysfs parsing (on a fake tree), the
// levels and fan-outs, the Timeloop YAML round trip, errors, and CoSA's MIP
// scheduling a ResNet-like layer on the real machine's description.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "support/cosa_fixture.h"
#include "support/test_util.h"
#include "sylva/core/file.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_search.h"

namespace sylva::cosa {
namespace {

namespace fs = std::filesystem;
using test::error_of;

// A sysfs cpu directory with CPU 0's caches: {level, type, size, shared_cpu_list}.
struct FakeSysfs {
  explicit FakeSysfs(const std::string& tag) : root(fs::temp_directory_path() / ("sylva_cosa_cpu_" + tag)) {
    fs::remove_all(root);
  }
  ~FakeSysfs() { fs::remove_all(root); }
  void cache(int index, const std::map<std::string, std::string>& files) const {
    const fs::path d = root / "cpu0" / "cache" / ("index" + std::to_string(index));
    fs::create_directories(d);
    for (const auto& [name, text] : files) std::ofstream(d / name) << text << "\n";
  }
  void zen_like() const {  // 8 CPUs: private L1d/L2, one L3
    cache(0, {{"level", "1"}, {"type", "Data"}, {"size", "48K"}, {"shared_cpu_list", "0"}});
    cache(1, {{"level", "1"}, {"type", "Instruction"}, {"size", "32K"}, {"shared_cpu_list", "0"}});
    cache(2, {{"level", "2"}, {"type", "Unified"}, {"size", "2048K"}, {"shared_cpu_list", "0-1"},
              {"coherency_line_size", "64"}});
    cache(3, {{"level", "3"}, {"type", "Unified"}, {"size", "36M"}, {"shared_cpu_list", "0-3,4-7"}});
  }
  fs::path root;
};

TEST(CosaCpu, ReadsTheDataCachesOfCpu0) {
  FakeSysfs sys("read");
  sys.zen_like();
  const CpuFacts f = read_cpu_facts(sys.root.string(), 8);
  ASSERT_EQ(f.caches.size(), 3u);  // the instruction cache is left out
  EXPECT_EQ(f.cores, 8);
  EXPECT_EQ(f.caches[0].level, 1);
  EXPECT_EQ(f.caches[0].bytes, 48 << 10);
  EXPECT_EQ(f.caches[1].bytes, 2 << 20);
  EXPECT_EQ(f.caches[1].shared_by, 2);
  EXPECT_EQ(f.caches[2].bytes, int64_t{36} << 20);
  EXPECT_EQ(f.caches[2].shared_by, 8);
  EXPECT_GE(f.simd_lanes, 4);
}

CpuArchSources sources(const std::string& sysfs, bool sysconf = true, const std::string& file = "") {
  CpuArchSources s;
  s.sysfs_cpu = sysfs;
  s.sysconf = sysconf;
  s.fallback_file = file;
  return s;
}

// find_cpu_arch's order: sysfs, sysconf, the fallback file, the shipped
// architecture; each later source says why the earlier ones failed, and a
// bad fallback file is an error rather than a reason to go on.
TEST(CosaCpu, FindsTheArchitectureThroughItsFallbacks) {
  FakeSysfs sys("find");
  sys.zen_like();
  std::string from;
  EXPECT_EQ(find_cpu_arch(sources(sys.root.string()), &from).levels[1].entries, 12288);
  EXPECT_EQ(from, "sysfs (" + sys.root.string() + ")");

  const std::string none = (sys.root / "none").string();
  const Arch shipped = find_cpu_arch(sources(none, false), &from);
  EXPECT_CONTAINS(from, "the shipped fallback (src/sched/arch/cpu_fallback.yaml); sysfs: [cosa] no cache description at " + none);
  EXPECT_EQ(shipped.name, "cpu_fallback");
  std::vector<std::string> names;
  for (const Level& l : shipped.levels) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Registers", "L1", "L2", "L3", "DRAM"}));
  Problem p;
  p.name = "resnet_like";
  p.bounds = {3, 3, 14, 14, 64, 64, 1};  // R S P Q C K N
  const Result r = schedule(p, shipped, cpu_mapspace(shipped));
  EXPECT_TRUE(r.evaluation.valid) << r.evaluation.why;

  const Arch two = cpu_arch(test::two_core_facts(), "two");
  fs::create_directories(sys.root);
  const std::string file = (sys.root / "two.yaml").string();
  write_file_atomically(file, arch_yaml(two));
  const Arch read = find_cpu_arch(sources(none, false, file), &from);
  EXPECT_CONTAINS(from, "the fallback file " + file + "; sysfs: ");
  EXPECT_EQ(arch_yaml(read), arch_yaml(two));

  write_file_atomically(file, "arch: [1, 2]\n");
  EXPECT_CONTAINS(error_of([&] { find_cpu_arch(sources(none, false, file)); }),
                  file);
}

// glibc's sysconf against sysfs on this machine, where both describe the caches.
TEST(CosaCpu, SysconfAgreesWithSysfsHere) {
  CpuFacts fs_facts, sc_facts;
  try {
    fs_facts = read_cpu_facts();
    sc_facts = sysconf_cpu_facts();
  } catch (const Error& e) {
    GTEST_SKIP() << "this machine lacks one of the two descriptions: " << e.what();
  }
  ASSERT_FALSE(sc_facts.caches.empty());
  EXPECT_EQ(sc_facts.caches[0].level, 1);
  EXPECT_EQ(sc_facts.caches[0].bytes, fs_facts.caches[0].bytes);
  EXPECT_EQ(sc_facts.caches[0].line_bytes, fs_facts.caches[0].line_bytes);
  std::string from;
  EXPECT_EQ(find_cpu_arch(sources("/nonexistent"), &from).levels[1].entries, sc_facts.caches[0].bytes / 4);
  EXPECT_CONTAINS(from, "sysconf; sysfs: ");
}

TEST(CosaCpu, LevelsInstancesAndFanouts) {
  CpuFacts f;
  f.cores = 8;
  f.simd_lanes = 16;
  f.vector_registers = 32;
  f.caches = {{1, 48 << 10, 1, 64}, {2, 2 << 20, 2, 64}, {3, int64_t{36} << 20, 8, 64}};
  const Arch a = cpu_arch(f);
  ASSERT_EQ(a.levels.size(), 5u);
  EXPECT_EQ(a.mac_instances, 128);
  const std::vector<std::string> names{"Registers", "L1", "L2", "L3", "DRAM"};
  const std::vector<int64_t> instances{128, 8, 4, 1, 1}, entries{28, 12288, 524288, 9437184, 0};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(a.levels[i].name, names[i]);
    EXPECT_EQ(a.levels[i].instances, instances[i]) << names[i];
    EXPECT_EQ(a.levels[i].entries, entries[i]) << names[i];
  }
  EXPECT_EQ(a.fanout(1), 16);  // SIMD lanes under each L1
  EXPECT_EQ(a.fanout(2), 2);   // two cores per L2
  EXPECT_EQ(a.fanout(3), 4);
  EXPECT_TRUE(a.levels[4].dram);
  EXPECT_DOUBLE_EQ(a.levels[1].read_bandwidth, 32.0);  // two 64-byte lines per cycle per core
  EXPECT_DOUBLE_EQ(a.levels[2].read_bandwidth, 32.0);  // one line per cycle for each of its 2 cores

  f.cores = 6;  // an L3 shared by 4 of 6 CPUs cannot be 1.5 instances: one serves all
  f.caches = {{1, 48 << 10, 1, 64}, {3, int64_t{36} << 20, 4, 64}};
  EXPECT_EQ(cpu_arch(f).levels[2].instances, 1);
}

TEST(CosaCpu, TheYamlReadsBackAsTheSameArchitecture) {
  FakeSysfs sys("yaml");
  sys.zen_like();
  const Arch a = cpu_arch(read_cpu_facts(sys.root.string(), 8));
  const fs::path file = sys.root / "cpu.yaml";
  write_file_atomically(file.string(), arch_yaml(a));
  const Arch b = read_arch(file.string());
  EXPECT_EQ(b.mac_instances, a.mac_instances);
  EXPECT_EQ(b.mac_word_bits, 32);
  ASSERT_EQ(b.levels.size(), a.levels.size());
  for (size_t i = 0; i < a.levels.size(); ++i) {
    const Level &x = a.levels[i], &y = b.levels[i];
    EXPECT_EQ(y.name, x.name);
    EXPECT_EQ(y.entries, x.entries);
    EXPECT_EQ(y.instances, x.instances);
    EXPECT_EQ(y.word_bits, x.word_bits);
    EXPECT_EQ(y.block_size, x.block_size);
    EXPECT_EQ(y.dram, x.dram);
    EXPECT_DOUBLE_EQ(y.read_bandwidth, x.read_bandwidth);
    EXPECT_DOUBLE_EQ(y.write_bandwidth, x.write_bandwidth);
  }
}

TEST(CosaCpu, BadDescriptionsNameTheFile) {
  FakeSysfs none("none");
  EXPECT_CONTAINS(error_of([&] { read_cpu_facts(none.root.string(), 2); }), "no cache description at");
  FakeSysfs bad("bad");
  bad.cache(0, {{"level", "1"}, {"type", "Data"}, {"size", "48Q"}, {"shared_cpu_list", "0"}});
  EXPECT_CONTAINS(error_of([&] { read_cpu_facts(bad.root.string(), 2); }), "index0/size: unknown size unit in '48Q'");
  FakeSysfs list("list");
  list.cache(0, {{"level", "1"}, {"type", "Data"}, {"size", "48K"}, {"shared_cpu_list", "3-1"}});
  EXPECT_CONTAINS(error_of([&] { read_cpu_facts(list.root.string(), 2); }), "bad CPU range '3-1'");
  FakeSysfs missing("missing");
  missing.cache(0, {{"level", "1"}, {"type", "Data"}, {"shared_cpu_list", "0"}});
  EXPECT_CONTAINS(error_of([&] { read_cpu_facts(missing.root.string(), 2); }), "cannot read");
  CpuFacts shrinking;
  shrinking.caches = {{1, 1 << 20, 1, 64}, {2, 1 << 10, 1, 64}};
  EXPECT_CONTAINS(error_of([&] { cpu_arch(shrinking); }), "L2 (1024 bytes) is not larger than the cache below it");
}

// The CPU mapspace: Registers keep only Outputs, the lanes run along K and
// the cores along output dimensions -- in CoSA's MIP, in random_mapping and
// in mip_objective's feasibility.
TEST(CosaCpu, TheCpuMapspaceBoundsWhereSpatialLoopsGo) {
  const Arch a = cpu_arch(test::two_core_facts());
  const Mapspace ms = cpu_mapspace(a);
  EXPECT_EQ(ms.keep[0], (std::array<bool, kTensors>{false, false, true}));
  for (size_t i = 1; i < ms.keep.size(); ++i) EXPECT_EQ(ms.keep[i], (std::array<bool, kTensors>{true, true, true}));
  Problem p;
  p.name = "l";
  p.bounds = {3, 3, 8, 8, 32, 64, 2};
  const auto only_allowed = [&](const Mapping& m) {
    for (size_t i = 0; i < m.levels.size(); ++i)
      for (int d = 0; d < kDims; ++d)
        if (m.levels[i].spatial[static_cast<size_t>(d)] > 1 && !ms.spatial_allowed(static_cast<int>(i), d))
          return false;
    return true;
  };
  const Result r = schedule(p, a, ms);
  EXPECT_TRUE(r.evaluation.valid);
  EXPECT_TRUE(only_allowed(r.mapping)) << mapping_yaml(r.mapping);
  std::mt19937_64 rng(3);
  int spatial = 0;
  for (int i = 0; i < 200; ++i) {
    const Mapping m = random_mapping(p, a, ms, rng);
    EXPECT_TRUE(only_allowed(m)) << mapping_yaml(m);
    for (const LevelMapping& l : m.levels) spatial += l.spatial[K] > 1;
  }
  EXPECT_GT(spatial, 50);  // the draw does place spatial factors, where allowed
  // A mapping with half its lanes along C (a factor 2 of K to DRAM, one of
  // C from the lowest level holding one) meets every other constraint but
  // not the mapspace's.
  Mapping lanes_on_c = r.mapping;
  auto& lanes = lanes_on_c.levels[1].spatial;
  ASSERT_EQ(lanes[K], 16) << mapping_yaml(r.mapping);
  lanes[K] /= 2;
  lanes_on_c.levels[static_cast<size_t>(a.level("DRAM"))].temporal[K] *= 2;
  size_t from = 0;
  while (lanes_on_c.levels[from].temporal[C] % 2 != 0) ++from;
  lanes_on_c.levels[from].temporal[C] /= 2;
  lanes[C] *= 2;
  bool feasible = false, feasible_cpu = true;
  Mapspace all_dims = ms;
  all_dims.spatial_dims.clear();
  mip_objective(lanes_on_c, p, a, all_dims, {}, &feasible);
  mip_objective(lanes_on_c, p, a, ms, {}, &feasible_cpu);
  EXPECT_TRUE(feasible) << mapping_yaml(lanes_on_c);
  EXPECT_FALSE(feasible_cpu);
}

// The CPU mapspace holds the outputs at the level above L1 (its R, S, C
// loops innermost, which run_conv folds into the micro-kernel's block):
// CoSA's mapping and random ones obey it; apply_stationary keeps each
// group's order.
TEST(CosaCpu, TheCpuMapspaceHoldsTheOutputsAboveL1) {
  const Arch a = cpu_arch(test::two_core_facts());
  const Mapspace ms = cpu_mapspace(a);
  const int above_l1 = a.level("L1") + 1;
  EXPECT_EQ(ms.stationary_at(above_l1), Outputs);
  EXPECT_EQ(ms.stationary_at(a.level("L1")), -1);
  const auto reduction_first = [&](const Mapping& m) {
    const std::string& order = m.levels[static_cast<size_t>(above_l1)].temporal_permutation;
    return std::is_permutation(order.begin(), order.begin() + 3, std::string("RSC").begin());
  };
  Problem p;
  p.name = "l";
  p.bounds = {3, 3, 8, 8, 32, 64, 2};
  const Result r = schedule(p, a, ms);
  EXPECT_TRUE(reduction_first(r.mapping)) << mapping_yaml(r.mapping);
  // The MIP priced that order: its objective is mip_objective's, which holds the outputs there.
  EXPECT_NEAR(mip_objective(r.mapping, p, a, ms, {}), r.objective, 1e-6);
  std::mt19937_64 rng(9);
  for (int i = 0; i < 100; ++i) {
    const Mapping m = random_mapping(p, a, ms, rng);
    EXPECT_TRUE(reduction_first(m)) << mapping_yaml(m);
  }
  const SearchResult h = hybrid_search(p, a, ms, {.threads = 1, .seed = 4, .max_samples = 300});
  ASSERT_TRUE(h.found);
  EXPECT_TRUE(reduction_first(h.mapping)) << mapping_yaml(h.mapping);
  Mapping m = blank_mapping(a, ms);
  m.levels[static_cast<size_t>(above_l1)].temporal_permutation = "PRQKSNC";
  apply_stationary(m, ms);
  EXPECT_EQ(m.levels[static_cast<size_t>(above_l1)].temporal_permutation, "RSCPQKN");
  EXPECT_EQ(m.levels[0].temporal_permutation, blank_mapping(a, ms).levels[0].temporal_permutation);
}

TEST(CosaCpu, CosaSchedulesALayerOnThisMachine) {
  if (!fs::is_directory("/sys/devices/system/cpu/cpu0/cache"))
    GTEST_SKIP() << "no /sys/devices/system/cpu/cpu0/cache on this machine (not Linux, or sysfs not mounted)";
  const Arch a = this_cpu_arch();
  ASSERT_GE(a.levels.size(), 3u);
  Problem p;
  p.name = "resnet_like";
  p.bounds = {3, 3, 14, 14, 64, 64, 1};  // R S P Q C K N
  const Result r = schedule(p, a, keep_everything(a));
  check_mapping(r.mapping, p, a);  // every factor placed, no fan-out exceeded
  EXPECT_TRUE(r.evaluation.valid);
  EXPECT_GT(r.evaluation.cycles, 0);
  EXPECT_GE(r.evaluation.cycles, p.macs() / a.mac_instances);  // no faster than every MAC unit busy
}

}  // namespace
}  // namespace sylva::cosa
