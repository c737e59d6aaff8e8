// CUDA convolution kernels realising CoSA mappings of the GPU architecture
// (issue: CoSA drives Sylva's own kernels): a mapping of gpu_arch's four
// levels becomes a plan (blocks from L2's spatial loops, threads from
// SharedMemory's, a register tile from Registers' temporal loops, the
// SharedMemory tile staged where the mapping keeps weights or inputs
// there), the plan becomes CUDA source (kernels/templates/cosa_conv.cuh
// with the plan as a constant) that NVRTC compiles; run_gpu_conv
// (sylva/graph/cosa_gpu_run.h) runs it on CUDA device 0. emulate_gpu_conv runs the same template text on the
// host, a block's threads in turn between its barriers: how the index
// arithmetic is checked where no GPU is present.
//
// @code
// const cosa::Arch g = cosa::h200_arch();
// cosa::Result r = cosa::schedule(p, g, cosa::gpu_mapspace(g), {}, cosa::cpu_limits());
// const cosa::GpuConvPlan plan = cosa::gpu_conv_plan(p, r.mapping, g);
// const std::string cuda = cosa::gpu_conv_source(plan, cosa::GpuReal::f32);   // for NVRTC
// cosa::emulate_gpu_conv(plan, w.data(), in.data(), out.data());              // on the host
// @endcode
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// The mapspace of gpu_arch's machine as the generated kernel realises
/// it: Registers keep only Outputs (a thread's accumulators), SharedMemory
/// keeps Weights and Inputs (the staged tiles; outputs go from registers
/// to global memory), L2 and DRAM keep everything. Spatial loops may run
/// over every dimension (a reduction split over threads or SMs is added
/// atomically).
Mapspace gpu_mapspace(const Arch& a);

/// Loops outermost first, as the kernel walks them.
struct GpuLoop {
  int dim = 0;
  int64_t factor = 1;
  int64_t stride = 1;  // index step of `dim` per iteration
};

/// What the kernel runs: a value, printable with describe().
struct GpuConvPlan {
  Problem problem;
  std::vector<GpuLoop> outer;      // DRAM's and L2's temporal loops (each block walks them)
  std::vector<GpuLoop> grid;       // L2's spatial loops: blockIdx.x
  std::vector<GpuLoop> threads;    // SharedMemory's spatial loops: threadIdx.x
  std::vector<GpuLoop> out_steps;  // SharedMemory's temporal loops over K, P, Q, N
  std::vector<GpuLoop> red_steps;  // SharedMemory's temporal loops over R, S, C
  std::array<int64_t, kDims> tile{};  // a staged SharedMemory tile
  std::array<int64_t, kDims> reg{};   // a thread's register tile
  bool stage_weights = false, stage_inputs = false;
  bool atomic = false;  // blocks or threads split a reduction
  int64_t blocks = 1, threads_per_block = 1;
  int64_t accumulators = 1;                // per thread: the register tile's outputs
  int64_t smem_weights = 0, smem_inputs = 0;  // staged elements
  std::array<int64_t, 2> tile_input{};     // the staged input tile's W, H
  /// Dynamic shared memory per block for elements of `bytes` bytes.
  int64_t shared_bytes(int bytes) const { return (smem_weights + smem_inputs) * bytes; }
};

/// The plan of mapping `m` of `a` (gpu_arch's levels: Registers,
/// SharedMemory, L2, DRAM). sylva::Error naming the level and tensor for
/// an invalid mapping (check_mapping), staged tiles above SharedMemory's
/// capacity, accumulators above Registers' capacity (or 255, the most a
/// CUDA thread has), more than 1024 threads per block, or index
/// arithmetic past 32 bits.
GpuConvPlan gpu_conv_plan(const Problem& p, const Mapping& m, const Arch& a);

/// One plan per line group: grid, threads, tiles, staging.
std::string describe(const GpuConvPlan& plan);

enum class GpuReal : uint8_t { f32, f64 };

/// The CUDA source of the plan's kernel (one `extern "C" __global__`
/// entry point, gpu_conv_kernel_name(plan, real)), for NVRTC.
std::string gpu_conv_source(const GpuConvPlan& plan, GpuReal real);
std::string gpu_conv_kernel_name(const GpuConvPlan& plan, GpuReal real);

/// The plan run on the host from the same template text: blocks and
/// threads in turn, each barrier a pass over the block's threads. Adds to
/// `outputs` (zero them first for the convolution), as the kernel does.
template <class T>
void emulate_gpu_conv(const GpuConvPlan& plan, const T* weights, const T* inputs, T* outputs);

}  // namespace sylva::cosa
