// run_gpu_conv on the CUDA runtime (built with -DSYLVA_BUILD_CUDA=ON).
#include <chrono>
#include <memory>

#include "../backend/cuda/cuda_check.h"
#include "../backend/cuda/device_memory.h"
#include "../backend/cuda/nvrtc_cache.h"
#include "sylva/graph/cosa_gpu_run.h"
#include "sylva/sched/cosa_kernel.h"

namespace sylva::cosa {
namespace {

using Device = std::unique_ptr<void, cuda::DeviceDeleter>;

Device upload(const float* host, int64_t n) {
  void* p = nullptr;
  SYLVA_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(n) * sizeof(float)));
  Device d(p);
  if (host) SYLVA_CUDA_CHECK(cudaMemcpy(p, host, static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

std::unique_ptr<CUevent_st, cuda::EventDeleter> event() {
  cudaEvent_t e = nullptr;
  SYLVA_CUDA_CHECK(cudaEventCreate(&e));
  return std::unique_ptr<CUevent_st, cuda::EventDeleter>(e);
}

}  // namespace

GpuRun run_gpu_conv(const GpuConvPlan& plan, const float* weights, const float* inputs, float* outputs, int reps) {
  const Problem& p = plan.problem;
  SYLVA_CHECK(reps >= 1, "[cosa] run_gpu_conv '", p.name, "': reps must be at least 1, got ", reps);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  SYLVA_CHECK(err == cudaSuccess && count > 0, "[cosa] run_gpu_conv '", p.name, "': no CUDA device visible (",
              err == cudaSuccess ? "0 devices" : cudaGetErrorString(err), ")");
  SYLVA_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  SYLVA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  GpuRun run;
  run.device = prop.name;

  static cuda::NvrtcCache cache(cuda::NvrtcCache::default_dir());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  const std::shared_ptr<const std::string> cubin = cache.compile(gpu_conv_source(plan, GpuReal::f32), arch);
  run.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudaLibrary_t lib = nullptr;
  SYLVA_CUDA_CHECK(cudaLibraryLoadData(&lib, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  const std::unique_ptr<CUlib_st, cuda::LibraryDeleter> owned(lib);
  cudaKernel_t kernel = nullptr;
  SYLVA_CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, gpu_conv_kernel_name(plan, GpuReal::f32).c_str()));
  const int64_t smem = plan.shared_bytes(sizeof(float));
  SYLVA_CHECK(smem <= static_cast<int64_t>(prop.sharedMemPerBlockOptin), "[cosa] run_gpu_conv '", p.name,
              "': level SharedMemory: the staged tile needs ", smem, " bytes, the GPU gives a block ",
              prop.sharedMemPerBlockOptin);
  if (smem > 48 * 1024)  // above the default: opt in (sm_70 and later)
    SYLVA_CUDA_CHECK(cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(smem), 0));

  const Device w = upload(weights, weight_size(p)), in = upload(inputs, input_size(p));
  const Device out = upload(nullptr, output_size(p));
  cudaStream_t s = nullptr;
  SYLVA_CUDA_CHECK(cudaStreamCreate(&s));
  const std::unique_ptr<CUstream_st, cuda::StreamDeleter> stream(s);
  const auto start = event(), stop = event();
  const void* wp = w.get();
  const void* ip = in.get();
  void* op = out.get();
  void* args[] = {&wp, &ip, &op};
  const size_t out_bytes = static_cast<size_t>(output_size(p)) * sizeof(float);
  for (int r = 0; r < reps; ++r) {
    SYLVA_CUDA_CHECK(cudaEventRecord(start.get(), s));
    SYLVA_CUDA_CHECK(cudaMemsetAsync(op, 0, out_bytes, s));
    SYLVA_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(plan.blocks)),
                                      dim3(static_cast<unsigned>(plan.threads_per_block)), args,
                                      static_cast<size_t>(smem), s));
    SYLVA_CUDA_CHECK(cudaEventRecord(stop.get(), s));
    SYLVA_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    SYLVA_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    run.seconds.push_back(ms * 1e-3);
  }
  SYLVA_CUDA_CHECK(cudaMemcpy(outputs, op, out_bytes, cudaMemcpyDeviceToHost));
  return run;
}

}  // namespace sylva::cosa
