// Internal: RAII deleters for CUDA handles, the per-thread current device,
// and the CUDA backend's device memory (a stream-ordered cache of blocks,
// block_cache.h, marked with an event on every lane of the backend).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "block_cache.h"
#include "sylva/core/buffer.h"

namespace sylva::cuda {

struct StreamDeleter {
  void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
};
struct DeviceDeleter {
  void operator()(void* p) const { cudaFree(p); }
};
struct LibraryDeleter {
  void operator()(CUlib_st* l) const { cudaLibraryUnload(l); }
};
struct EventDeleter {
  void operator()(CUevent_st* e) const { cudaEventDestroy(e); }
};
struct PinnedDeleter {
  void operator()(void* p) const { cudaFreeHost(p); }
};

/// A device allocation of fixed size (cudaMalloc; sylva::Error when it fails).
std::unique_ptr<void, DeviceDeleter> device_alloc(size_t bytes);

/// Makes `index` the calling thread's current device, once per thread:
/// CUDA's current device is per thread, and work issued from another thread
/// (the streaming worker, IOS lanes, a user's threads) would go to device 0.
void use_device(int index);

/// Device memory for Buffers (arenas, parameter copies, scratch). Releasing
/// does not wait for the device: the block is reused once the work queued
/// on every stream `streams()` names at its release is done. Copying waits
/// (Buffers copy only when they grow, which the steady state does not do).
class DeviceMemory final : public Memory {
 public:
  DeviceMemory(int index, std::function<std::vector<cudaStream_t>()> streams);
  void* allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void copy(void* dst, const void* src, size_t bytes) override;
  bool host_visible() const override { return false; }
  int64_t peak_bytes() const override { return cache_.stats().peak; }
  void reset_peak() override { cache_.reset_peak(); }

 private:
  uint64_t mark();
  bool done(uint64_t marker);

  int index_;
  std::function<std::vector<cudaStream_t>()> streams_;
  std::mutex mutex_;  // markers_: releases may come from any thread
  std::map<uint64_t, std::vector<cudaEvent_t>> markers_;
  uint64_t last_marker_ = 0;
  BlockCache cache_;  // last: its destructor still marks and frees through the members above
};

}  // namespace sylva::cuda
