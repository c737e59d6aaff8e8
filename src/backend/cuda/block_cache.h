// Internal: the CUDA backend's device memory as a stream-ordered cache of
// blocks. A released block is not freed and the host does not wait: it is
// kept in its size class with a marker of the work queued until then (an
// event on every lane), and it is handed out again once that work is done.
// Out of memory, the cache waits for the device, frees what it holds and
// tries again. The CUDA calls are injected, so that the logic is pure C++
// and is tested without a GPU (tests/backend/block_cache_test.cc).
//
// @code
// cuda::BlockCache cache({.malloc = ..., .free = ..., .mark = ..., .done = ..., .wait_all = ...});
// void* p = cache.allocate(1 << 20);
// cache.release(p);  // no synchronisation; reused when the marked work is done
// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace sylva::cuda {

struct BlockCacheOps {
  std::function<void*(size_t)> malloc;  // nullptr when out of memory
  std::function<void(void*)> free;
  std::function<uint64_t()> mark;       // a marker of all the work queued so far
  std::function<bool(uint64_t)> done;   // whether a marker's work has finished
  std::function<void()> wait_all;       // waits until the device is idle
};

class BlockCache {
 public:
  struct Stats {
    int64_t in_use = 0, cached = 0;  // bytes handed out / kept for reuse
    int64_t peak = 0;                // most bytes ever held from the device (in use + cached)
    int64_t mallocs = 0, reuses = 0;
  };

  explicit BlockCache(BlockCacheOps ops) : ops_(std::move(ops)) {}
  /// Frees the cached blocks (blocks still in use are the owners' to release first).
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// A block of at least `bytes` (size_class(bytes)): a cached one of that
  /// class whose marked work is done, else a new one. sylva::Error with the
  /// sizes when the device has no room even after the cache is emptied.
  void* allocate(size_t bytes);
  /// Returns a block from allocate() to the cache, marked; nullptr is ignored.
  void release(void* p);
  /// Gives every cached block back to the device (after waiting for it).
  void trim();
  Stats stats() const;
  /// Starts the peak over from the bytes held now.
  void reset_peak();

  /// The bytes a request is served with: powers of two from 512 B to
  /// 1 MiB, then multiples of 2 MiB (at most 2x, or 2 MiB, over).
  static size_t size_class(size_t bytes);

 private:
  struct Cached {
    void* p;
    uint64_t marker;
  };
  void trim_locked();

  BlockCacheOps ops_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<Cached>> free_;  // by size class, oldest first
  std::unordered_map<void*, size_t> used_;      // block -> size class
  Stats stats_;
};

}  // namespace sylva::cuda
