#include "sylva/sched/cosa_gpu.h"

#include <algorithm>
#include <cmath>

#include "sylva/core/error.h"
#include "sylva/core/log.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/h200_arch.h"

namespace sylva::cosa {

Arch gpu_arch(const GpuFacts& f) {
  SYLVA_CHECK(f.sms > 0 && f.warps_per_sm > 0 && f.lanes > 0 && f.registers_per_sm > 0 && f.shared_bytes > 0 &&
                  f.l2_bytes > 0 && f.clock_ghz > 0 && f.dram_bytes_per_second > 0,
              "[cosa] gpu_arch '", f.name, "': every fact must be positive (SMs ", f.sms, ", warps ", f.warps_per_sm,
              ", lanes ", f.lanes, ", registers ", f.registers_per_sm, ", shared ", f.shared_bytes, " B, L2 ",
              f.l2_bytes, " B, clock ", f.clock_ghz, " GHz, DRAM ", f.dram_bytes_per_second, " B/s)");
  Arch a;
  a.name = f.name;
  a.mac_word_bits = 32;
  const int64_t threads = int64_t{f.warps_per_sm} * f.lanes;
  a.mac_instances = f.sms * threads;
  a.mac_energy = std::nan("");
  const int64_t per_thread = std::min<int64_t>(255, f.registers_per_sm / threads);
  // At most 64 accumulators: the generated kernel's register tile is an
  // unrolled array, which nvcc (CUDA 13, sm_90) keeps in registers up to
  // 84 floats and puts in local memory from 98.
  Level regs{.name = "Registers", .entries = std::clamp<int64_t>(per_thread - per_thread / 4, 1, 64),
             .instances = a.mac_instances, .word_bits = 32};
  regs.vector_access_energy = std::nan("");
  Level smem{.name = "SharedMemory", .entries = f.shared_bytes / 4, .instances = f.sms, .word_bits = 32};
  smem.read_bandwidth = smem.write_bandwidth = 32;  // 32 banks of one word per cycle
  smem.vector_access_energy = std::nan("");
  const double dram_words = f.dram_bytes_per_second / (f.clock_ghz * 1e9) / 4;
  Level l2{.name = "L2", .entries = f.l2_bytes / 4, .instances = 1, .word_bits = 32, .block_size = 8};
  l2.read_bandwidth = l2.write_bandwidth = 2 * dram_words;
  l2.vector_access_energy = std::nan("");
  Level dram{.name = "DRAM", .instances = 1, .word_bits = 32, .block_size = 8, .dram = true};
  dram.read_bandwidth = dram.write_bandwidth = dram_words;
  dram.vector_access_energy = pat_access_energy(dram);
  a.levels = {regs, smem, l2, dram};
  return a;
}

Arch h200_arch() { return parse_arch(kH200Arch, "h200"); }

Arch this_gpu_arch(std::string* source) {
  try {
    const GpuFacts f = cuda_gpu_facts(0);
    Arch a = gpu_arch(f);
    if (source) *source = "CUDA device 0 (" + f.name + ")";
    return a;
  } catch (const Error& e) {
    const std::string from = std::string("the shipped H200 (src/sched/arch/h200.yaml); ") + e.what();
    log(LogLevel::warning, "[cosa] the GPU's architecture from " + from);
    if (source) *source = from;
    return h200_arch();
  }
}

}  // namespace sylva::cosa
