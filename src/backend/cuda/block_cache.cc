#include "block_cache.h"

#include <algorithm>
#include <bit>

#include "sylva/core/error.h"

namespace sylva::cuda {

BlockCache::~BlockCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.cached > 0) {
    ops_.wait_all();
    for (auto& [size, blocks] : free_)
      for (const Cached& c : blocks) ops_.free(c.p);
  }
}

size_t BlockCache::size_class(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes <= 512) return 512;
  if (bytes <= kMiB) return std::bit_ceil(bytes);
  return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

void* BlockCache::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = free_.find(size); it != free_.end())
    for (auto b = it->second.begin(); b != it->second.end(); ++b)
      if (ops_.done(b->marker)) {
        void* p = b->p;
        it->second.erase(b);
        used_[p] = size;
        stats_.cached -= static_cast<int64_t>(size);
        stats_.in_use += static_cast<int64_t>(size);
        ++stats_.reuses;
        return p;
      }
  void* p = ops_.malloc(size);
  if (!p && stats_.cached > 0) {  // out of memory: give the cache back and try again
    trim_locked();
    p = ops_.malloc(size);
  }
  SYLVA_CHECK(p, "[cuda] out of device memory: ", bytes, " bytes asked for (", size, " with rounding), ",
              stats_.in_use, " bytes in use");
  used_[p] = size;
  stats_.in_use += static_cast<int64_t>(size);
  stats_.peak = std::max(stats_.peak, stats_.in_use + stats_.cached);
  ++stats_.mallocs;
  return p;
}

void BlockCache::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = used_.find(p);
  SYLVA_ASSERT(it != used_.end(), "BlockCache: releasing a block it did not hand out");
  const size_t size = it->second;
  const uint64_t marker = ops_.mark();  // first: if it throws, the block stays in use
  used_.erase(it);
  free_[size].push_back({p, marker});
  stats_.in_use -= static_cast<int64_t>(size);
  stats_.cached += static_cast<int64_t>(size);
}

void BlockCache::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
}

void BlockCache::trim_locked() {
  if (stats_.cached == 0) return;
  ops_.wait_all();
  for (auto& [size, blocks] : free_)
    for (const Cached& c : blocks) ops_.free(c.p);
  free_.clear();
  stats_.cached = 0;
}

void BlockCache::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.in_use + stats_.cached;
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sylva::cuda
