// Architectures shared by the CoSA tests: a tiny Timeloop-style one and the
// facts of a made-up two-core CPU.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "sylva/sched/cosa_cpu.h"

namespace sylva::test {

// 4 MACs under 4 one-word registers, one buffer of `buffer_entries` words,
// DRAM at 2 words per cycle.

inline std::string tiny_cosa_arch(int buffer_entries) {
  return R"(arch:
  arithmetic:
    instances: 4
  storage:
  - name: Reg
    entries: 1
    instances: 4
  - name: Buf
    entries: )" + std::to_string(buffer_entries) + R"(
    instances: 1
  - name: DRAM
    technology: DRAM
    instances: 1
    bandwidth: 2
)";
}

// Two cores with 16 float lanes and 32 vector registers, private 32 KiB L1
// and 1 MiB L2, a 32 MiB L3 shared by both.
// A convolution layer named "test" with equal strides and dilations.
inline cosa::Problem conv_layer(std::array<int64_t, cosa::kDims> bounds, int64_t stride = 1, int64_t dilation = 1) {
  cosa::Problem p;
  p.name = "test";
  p.bounds = bounds;
  p.w_stride = p.h_stride = stride;
  p.w_dilation = p.h_dilation = dilation;
  return p;
}

inline cosa::CpuFacts two_core_facts() {
  cosa::CpuFacts f;
  f.cores = 2;
  f.simd_lanes = 16;
  f.vector_registers = 32;
  f.caches = {{1, 32 << 10, 1, 64}, {2, 1 << 20, 1, 64}, {3, 32 << 20, 2, 64}};
  return f;
}

}  // namespace sylva::test
