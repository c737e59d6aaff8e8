// cuda_gpu_facts from the CUDA runtime (built with -DSYLVA_BUILD_CUDA=ON).
#include <cuda_runtime.h>

#include "sylva/core/error.h"
#include "sylva/sched/cosa_gpu.h"

namespace sylva::cosa {
namespace {

int attribute(cudaDeviceAttr what, int device, const char* name) {
  int v = 0;
  const cudaError_t err = cudaDeviceGetAttribute(&v, what, device);
  SYLVA_CHECK(err == cudaSuccess, "[cosa] CUDA device ", device, ": reading ", name, ": ", cudaGetErrorString(err));
  return v;
}

}  // namespace

GpuFacts cuda_gpu_facts(int device) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  SYLVA_CHECK(err == cudaSuccess && device >= 0 && device < count, "[cosa] no CUDA device ", device, " visible (",
              err == cudaSuccess ? std::to_string(count) + " device(s)" : std::string(cudaGetErrorString(err)), ")");
  cudaDeviceProp prop{};
  SYLVA_CHECK(cudaGetDeviceProperties(&prop, device) == cudaSuccess, "[cosa] CUDA device ", device,
              ": cudaGetDeviceProperties failed");
  GpuFacts f;
  f.name = prop.name;
  f.sms = prop.multiProcessorCount;
  f.warps_per_sm = 4;  // every SM since Volta has four warp schedulers
  f.lanes = prop.warpSize;
  f.registers_per_sm = prop.regsPerMultiprocessor;
  f.shared_bytes = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  f.l2_bytes = prop.l2CacheSize;
  f.clock_ghz = attribute(cudaDevAttrClockRate, device, "the clock rate") * 1e-6;  // kHz
  const double memory_khz = attribute(cudaDevAttrMemoryClockRate, device, "the memory clock");
  const double bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device, "the memory bus width");
  f.dram_bytes_per_second = 2 * memory_khz * 1e3 * bus_bits / 8;  // double data rate
  return f;
}

}  // namespace sylva::cosa
