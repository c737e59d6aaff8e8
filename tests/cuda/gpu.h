// What the GPU tests check before they run: whether a CUDA device is
// visible, and if not, why (the reason the tests skip with).
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace sylva::test {

/// "" when a CUDA device is visible; else why not.
inline std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  return n == 0 ? "no CUDA device: 0 devices" : "";
}

/// The message GPU tests skip with.
inline constexpr const char* kGpuTestsHint =
    " (GPU tests need a machine with an NVIDIA GPU; scripts/device_check.sh runs them)";

}  // namespace sylva::test
