// Internal: CUDA source for a fused row-local group (FusedProgram), from
// the template kernels/templates/fused_rows.cu embedded at build time. Pure
// C++ with no CUDA dependency, so it is built and tested in every
// configuration; compiling the source needs NVRTC (nvrtc_cache.h).
//
// @code
// cuda::FusedKernel k = cuda::fused_kernel_source(program, DType::f32, {150, 150});
// // k.source: CUDA C++ defining extern "C" k.kernel(SylvaFusedArgs); launch
// // with k.warps * 32 threads per block and k.shared_bytes of dynamic shared
// // memory (above 48 KiB: cudaFuncAttributeMaxDynamicSharedMemorySize first).
// @endcode
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "sylva/backend/backend.h"

namespace sylva::cuda {

struct FusedKernel {
  std::string source;  // CUDA C++ for NVRTC
  std::string kernel;  // the extern "C" entry point
  int warps = 4;       // warps per block; one row per warp at a time
  int inputs = 0, outputs = 0;
  int64_t scratch_per_warp = 0;  // elements of shared memory per warp
  int64_t shared_bytes = 0;      // dynamic shared memory per block, passed at launch
};

/// The kernel for `p` on `dtype` (f32 or f64); `input_cols[k]` is the width
/// of external input k (Concat and Assemble need it). sylva::Error naming
/// the program if it cannot be generated: an op that is not fusible, an
/// argument out of range, or more per-row scratch than `max_shared_bytes`
/// of shared memory allow with one warp per block (the backend passes the
/// device's opt-in maximum per block: 227 KiB on sm_90).
FusedKernel fused_kernel_source(const FusedProgram& p, DType dtype, std::span<const int64_t> input_cols,
                                int64_t max_shared_bytes = 48 * 1024);

}  // namespace sylva::cuda
