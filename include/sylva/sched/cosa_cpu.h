// This machine's CPU as a CoSA architecture (issue: CoSA drives Sylva's
// own kernels): vector registers, the data caches and DRAM as storage
// levels, SIMD lanes and cores as spatial fan-out, sized from Linux's
// sysfs cache description (/sys/devices/system/cpu/cpuN/cache/index*), and
// written in the Timeloop v1 format every CoSA tool reads.
//
// @code
// cosa::Arch a = cosa::this_cpu_arch();          // sylva::Error if sysfs has no cache description
// write_file_atomically("cpu.yaml", cosa::arch_yaml(a));  // a file to edit or keep as a fallback
// cosa::Result r = cosa::schedule(problem, a, cosa::keep_everything(a));
// @endcode
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// What the architecture is built from.
struct CpuFacts {
  struct Cache {
    int level = 0;          // 1, 2, 3, ...
    int64_t bytes = 0;
    int shared_by = 1;      // logical CPUs sharing one instance
    int64_t line_bytes = 64;
  };
  int cores = 1;            // logical CPUs this process may use
  int simd_lanes = 1;       // float32 lanes per vector register
  int vector_registers = 16;
  std::vector<Cache> caches;  // data and unified caches, innermost first
  /// Assumed (not read from the machine): float32 words per cycle each
  /// cache level can deliver to one core (L1: two 64-byte loads; L2: one
  /// line; L3 and beyond: half a line), and DRAM's words per cycle for the
  /// whole chip.
  double dram_words_per_cycle = 4.0;
};

/// Reads the caches of CPU 0 under `sysfs_cpu` (level, type, size,
/// shared_cpu_list, coherency_line_size; instruction caches left out),
/// with `cores` logical CPUs and this build's SIMD width (AVX-512: 16
/// float32 lanes and 32 registers, AVX2: 8 and 16, else 4 and 16).
/// sylva::Error naming the directory and file when a cache description is
/// missing or malformed.
CpuFacts read_cpu_facts(const std::string& sysfs_cpu = "/sys/devices/system/cpu", int cores = 0);

/// The architecture: "Registers" (vector_registers - 4 words per lane, one
/// instance per lane of every core), one level per data cache ("L1", "L2",
/// ...; instances = cores / shared_by, rounded so each divides the level
/// below), "DRAM"; float32 words; MAC instances = cores x lanes. A cache
/// that is larger than the one above it is required (sylva::Error).
Arch cpu_arch(const CpuFacts& facts, const std::string& name = "cpu");
/// The caches as glibc's sysconf reports them (_SC_LEVEL1_DCACHE_SIZE,
/// _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE and their line sizes; from
/// CPUID on x86): L1 and L2 private to a core, L3 shared by all `cores`.
/// sylva::Error when it reports no L1 data cache.
CpuFacts sysconf_cpu_facts(int cores = 0);

/// Where find_cpu_arch looks, in this order.
struct CpuArchSources {
  std::string sysfs_cpu = "/sys/devices/system/cpu";  // read_cpu_facts
  bool sysconf = true;                                // sysconf_cpu_facts
  std::string fallback_file;                          // a Timeloop v1 architecture ("": none)
};

/// The first source that works: sysfs, sysconf, the fallback file (an
/// error in that file is an error, not a reason to go on), and last the
/// architecture shipped in the library (src/sched/arch/cpu_fallback.yaml,
/// the machine this project measured on). `source`, if given, says which
/// one and why the earlier ones failed.
Arch find_cpu_arch(const CpuArchSources& sources, std::string* source = nullptr);
/// find_cpu_arch with the defaults and SYLVA_CPU_ARCH as the fallback
/// file; logs a warning when it is not read from sysfs.
Arch this_cpu_arch(std::string* source = nullptr);

/// The CPU's clock in GHz, for turning the model's cycles into time:
/// cpufreq's cpuinfo_max_freq, else /proc/cpuinfo's "cpu MHz", else NaN.
double nominal_ghz();

/// The architecture in Timeloop's v1 layout (what read_arch reads back).
std::string arch_yaml(const Arch& a);

/// A mapspace in which every level keeps every tensor (no bypass), as a
/// CPU's caches do.
Mapspace keep_everything(const Arch& a);

/// The mapspace of cpu_arch's machine as cosa_kernel's run_conv realises
/// it: the caches keep every tensor; the Registers keep only Outputs (the
/// micro-kernel's accumulators; weights and inputs stream from L1); the
/// SIMD lanes (the fan-out under L1) run along K, which the kernel
/// vectorises over K-blocked packed weights and [N][P][Q][K] outputs; the cores (fan-out under a shared cache) run
/// along output dimensions only (K, P, Q, N: threads write disjoint
/// outputs; a reduction across cores would run in turn); the level above
/// L1 holds the outputs stationary (its R, S, C loops innermost, which
/// run_conv folds into the micro-kernel's block).
Mapspace cpu_mapspace(const Arch& a);

}  // namespace sylva::cosa
