#include "device_memory.h"

#include <algorithm>
#include <string>

#include "cuda_check.h"
#include "sylva/core/log.h"

namespace sylva::cuda {

std::unique_ptr<void, DeviceDeleter> device_alloc(size_t bytes) {
  void* p = nullptr;
  SYLVA_CUDA_CHECK(cudaMalloc(&p, bytes));
  return std::unique_ptr<void, DeviceDeleter>(p);
}

void use_device(int index) {
  thread_local int current = -1;
  if (current == index) return;
  SYLVA_CUDA_CHECK(cudaSetDevice(index));
  current = index;
}

DeviceMemory::DeviceMemory(int index, std::function<std::vector<cudaStream_t>()> streams)
    : index_(index),
      streams_(std::move(streams)),
      cache_({.malloc =
                  [](size_t bytes) -> void* {
                    void* p = nullptr;
                    const cudaError_t err = cudaMalloc(&p, bytes);
                    if (err == cudaErrorMemoryAllocation) {
                      cudaGetLastError();  // clear it: the cache frees what it holds and tries again
                      return nullptr;
                    }
                    SYLVA_CUDA_CHECK(err);
                    return p;
                  },
              .free = [](void* p) { cudaFree(p); },
              .mark = [this] { return mark(); },
              .done = [this](uint64_t m) { return done(m); },
              .wait_all =
                  [this] {
                    for (cudaStream_t s : streams_()) SYLVA_CUDA_CHECK(cudaStreamSynchronize(s));
                  }}) {}

void* DeviceMemory::allocate(size_t bytes) {
  use_device(index_);
  return cache_.allocate(std::max<size_t>(bytes, 1));
}

void DeviceMemory::release(void* p) noexcept {
  try {
    cache_.release(p);
  } catch (const std::exception& e) {  // marking failed: the device is broken; the block stays allocated
    log(LogLevel::error, std::string("[cuda] releasing device memory: ") + e.what());
  }
}

void DeviceMemory::copy(void* dst, const void* src, size_t bytes) {
  use_device(index_);
  SYLVA_CUDA_CHECK(cudaDeviceSynchronize());
  if (bytes) SYLVA_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

uint64_t DeviceMemory::mark() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<cudaEvent_t> recorded;
  for (cudaStream_t s : streams_()) {
    cudaEvent_t e = nullptr;
    SYLVA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    recorded.push_back(e);
    SYLVA_CUDA_CHECK(cudaEventRecord(e, s));
  }
  markers_.emplace(++last_marker_, std::move(recorded));
  return last_marker_;
}

bool DeviceMemory::done(uint64_t marker) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = markers_.find(marker);
  if (it == markers_.end()) return true;  // found done before
  for (cudaEvent_t e : it->second) {
    const cudaError_t err = cudaEventQuery(e);
    if (err == cudaErrorNotReady) return false;
    SYLVA_CUDA_CHECK(err);
  }
  for (cudaEvent_t e : it->second) cudaEventDestroy(e);
  markers_.erase(it);
  return true;
}

}  // namespace sylva::cuda
