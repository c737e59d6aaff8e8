// An NVIDIA GPU as a CoSA architecture (issue: CoSA drives Sylva's own
// kernels): HBM → L2 → shared memory → registers, with SMs as the fan-out
// under L2 and warps × lanes (the FP32 units of an SM) under shared memory,
// written in the Timeloop v1 format every CoSA tool reads. The facts come
// from the CUDA runtime when a GPU is visible (cuda_gpu_facts), else from
// the H200 description shipped in the library (src/sched/arch/h200.yaml).
//
// @code
// std::string from;
// cosa::Arch g = cosa::this_gpu_arch(&from);  // the GPU's, or the shipped H200's
// cosa::Result r = cosa::schedule(problem, g, cosa::keep_everything(g));
// @endcode
#pragma once

#include <cstdint>
#include <string>

#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// What the architecture is built from.
struct GpuFacts {
  std::string name = "gpu";
  int sms = 0;
  int warps_per_sm = 4;   // warp schedulers: warps that issue in the same cycle
  int lanes = 32;         // threads per warp
  int64_t registers_per_sm = 65536;  // 32-bit registers
  int64_t shared_bytes = 0;          // per SM, as one block may use it (the opt-in maximum)
  int64_t l2_bytes = 0;
  double clock_ghz = 0;              // SM clock
  double dram_bytes_per_second = 0;  // HBM
};

/// The architecture: "Registers" (per thread: min(255, registers_per_sm /
/// (warps_per_sm · lanes)) less a quarter for addresses and operands, and
/// at most 64, what the generated kernels keep in registers
/// (cosa_gpu_kernel.h); one instance per FP32 lane), "SharedMemory" (one per SM, 32 words per cycle
/// each), "L2", "DRAM" (its bytes per second at the SM clock); float32
/// words, MAC instances = sms · warps_per_sm · lanes. The L2's bandwidth is
/// assumed, not read: twice DRAM's. sylva::Error for a fact that is not
/// positive.
Arch gpu_arch(const GpuFacts& facts);

/// The facts of CUDA device `device` (cudaGetDeviceProperties and device
/// attributes); sylva::Error saying why where Sylva was built without
/// CUDA or no such device is visible.
GpuFacts cuda_gpu_facts(int device = 0);

/// The H200 (SXM) shipped in the library: src/sched/arch/h200.yaml.
Arch h200_arch();

/// gpu_arch(cuda_gpu_facts(0)), or the shipped H200 where that fails
/// (logged as a warning with the reason); `source` says which.
Arch this_gpu_arch(std::string* source = nullptr);

}  // namespace sylva::cosa
