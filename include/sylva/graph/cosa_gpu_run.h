// CoSA's GPU convolutions run on CUDA device 0 (issue: CoSA drives Sylva's
// own kernels): the plan's float32 source (sched/cosa_gpu_kernel.h)
// compiled by NVRTC through the CUDA backend's kernel cache, launched with
// the plan's grid, threads and dynamic shared memory, timed with CUDA
// events. Without CUDA (or without a GPU) it throws saying so.
//
// @code
// cosa::GpuRun t = cosa::run_gpu_conv(plan, w.data(), in.data(), out.data(), /*reps=*/10);
// @endcode
#pragma once

#include <string>
#include <vector>

#include "sylva/sched/cosa_gpu_kernel.h"

namespace sylva::cosa {

struct GpuRun {
  std::string device;           // the GPU's name
  double compile_seconds = 0;   // NVRTC, or its cache
  std::vector<double> seconds;  // per launch, from CUDA events (zeroing the outputs included)
};

/// Uploads the tensors (run_conv's layouts), runs the plan's float32
/// kernel `reps` (>= 1) times and downloads the outputs of the last run.
/// sylva::Error saying why where Sylva was built without CUDA, no GPU is
/// visible, or a CUDA call fails.
GpuRun run_gpu_conv(const GpuConvPlan& plan, const float* weights, const float* inputs, float* outputs,
                    int reps = 1);

}  // namespace sylva::cosa
