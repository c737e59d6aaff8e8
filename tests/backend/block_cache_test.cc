// The CUDA backend's stream-ordered memory cache (src/backend/cuda/block_cache.h)
// on fake device calls: released blocks are reused only once their marked
// work is done, never freed on release, given back when the device is full,
// and the peak counts what is held from the device.
#include "../../src/backend/cuda/block_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "support/test_util.h"

namespace sylva::cuda {
namespace {

// A fake device: `capacity` bytes, markers finished up to `finished`.
struct FakeDevice {
  size_t capacity = 1 << 30, held = 0;
  uint64_t next_marker = 0, finished = 0;
  int frees = 0, waits = 0;
  std::set<void*> live;
  std::map<void*, size_t> sizes;

  BlockCacheOps ops() {
    return {.malloc =
                [this](size_t bytes) -> void* {
                  if (held + bytes > capacity) return nullptr;
                  void* p = std::malloc(bytes);
                  held += bytes;
                  live.insert(p);
                  sizes[p] = bytes;
                  return p;
                },
            .free =
                [this](void* p) {
                  ++frees;
                  held -= sizes.at(p);
                  live.erase(p);
                  std::free(p);
                },
            .mark = [this] { return ++next_marker; },
            .done = [this](uint64_t m) { return m <= finished; },
            .wait_all =
                [this] {
                  ++waits;
                  finished = next_marker;
                }};
  }
};

TEST(BlockCache, SizeClassesRoundUpAtMostTwofold) {
  EXPECT_EQ(BlockCache::size_class(1), 512u);
  EXPECT_EQ(BlockCache::size_class(513), 1024u);
  EXPECT_EQ(BlockCache::size_class(1 << 20), size_t{1} << 20);
  EXPECT_EQ(BlockCache::size_class((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(BlockCache::size_class((5 << 20) + 3), size_t{6} << 20);
  for (size_t b : {size_t{700}, size_t{3000}, size_t{900000}, size_t{7} << 20, size_t{123456789}}) {
    EXPECT_GE(BlockCache::size_class(b), b);
    EXPECT_LE(BlockCache::size_class(b), std::max(2 * b, b + (size_t{2} << 20)));
  }
}

TEST(BlockCache, AReleasedBlockIsReusedOnlyOnceItsWorkIsDone) {
  FakeDevice dev;
  {
    BlockCache cache(dev.ops());
    void* a = cache.allocate(1000);
    cache.release(a);  // its marker (1) is not finished: the device may still use it
    EXPECT_EQ(dev.frees, 0);
    EXPECT_EQ(dev.waits, 0) << "releasing must not wait for the device";
    void* b = cache.allocate(1000);
    EXPECT_NE(b, a);
    dev.finished = 1;  // a's work is done
    void* c = cache.allocate(900);  // the same size class (1024)
    EXPECT_EQ(c, a);
    void* d = cache.allocate(5000);  // another class: new
    EXPECT_NE(d, a);
    const BlockCache::Stats s = cache.stats();
    EXPECT_EQ(s.mallocs, 3);
    EXPECT_EQ(s.reuses, 1);
    EXPECT_EQ(s.in_use, 1024 + 1024 + 8192);
    EXPECT_EQ(s.cached, 0);
    for (void* p : {b, c, d}) cache.release(p);
    EXPECT_EQ(cache.stats().cached, 1024 + 1024 + 8192);
    EXPECT_EQ(cache.stats().peak, 1024 + 1024 + 8192);
    cache.release(nullptr);
  }
  EXPECT_TRUE(dev.live.empty()) << "the cache frees what it holds when it goes";
  EXPECT_GE(dev.waits, 1);
}

TEST(BlockCache, OutOfMemoryGivesTheCacheBackThenSaysSo) {
  FakeDevice dev;
  dev.capacity = 4 << 20;
  BlockCache cache(dev.ops());
  void* a = cache.allocate(3 << 20);  // 4 MiB class
  cache.release(a);
  void* b = cache.allocate(1 << 20);  // no room beside the cached 4 MiB: waits, frees it, retries
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(dev.waits, 1);
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(cache.stats().cached, 0);
  const std::string err = test::error_of([&] { cache.allocate(5 << 20); });
  EXPECT_CONTAINS(err, "[cuda] out of device memory: 5242880 bytes asked for (6291456 with rounding), 1048576 bytes in use");
  cache.release(b);
  cache.reset_peak();
  EXPECT_EQ(cache.stats().peak, 1 << 20);  // what is held now: b, cached
  cache.trim();
  EXPECT_EQ(cache.stats().cached, 0);
  EXPECT_TRUE(dev.live.empty());
}

}  // namespace
}  // namespace sylva::cuda
