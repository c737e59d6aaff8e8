// Host memory: a block of 1 MB or more is mapped on its own, so releasing
// it gives its pages back to the kernel at once, wherever the heap stands.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "sylva/core/buffer.h"
#include "sylva/core/tensor.h"

namespace sylva {
namespace {

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

constexpr size_t kMiB = size_t{1} << 20;

// Pages of [p, p + bytes) resident now (p page aligned).
size_t resident_pages(const void* p, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<void*>(p), bytes, in.data()), 0);
  size_t n = 0;
  for (const unsigned char c : in) n += c & 1u;
  return n;
}

bool all_bytes_are(const Buffer& b, size_t bytes, unsigned char v) {
  const auto* c = static_cast<const unsigned char*>(b.data());
  for (size_t i = 0; i < bytes; ++i)
    if (c[i] != v) return false;
  return true;
}

TEST(HostMemory, ABlockReleasedBetweenOthersGivesItsPagesBack) {
  if (!host_memory_maps_large_blocks())
    GTEST_SKIP() << "host blocks come from the heap here (AddressSanitizer checks heap blocks only)";
  // glibc's heap, once a large block was freed, serves blocks up to that
  // size itself (its mmap threshold grows, up to 32 MB) and keeps a freed
  // block below its top resident: as it stands after a while, set here.
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  Buffer below(host_memory()), above(host_memory());
  below.reserve(6 * kMiB);
  std::memset(below.data(), 1, 6 * kMiB);
  above.reserve(kMiB);
  std::memset(above.data(), 1, kMiB);
  const size_t held = resident_bytes();
  below = Buffer(host_memory());  // releases the 6 MB block
  const size_t after = resident_bytes();
  ASSERT_LT(after, held);
  EXPECT_GE(held - after, 5 * kMiB) << "resident " << held << " bytes before the release, " << after << " after";
}

// host_memory_zero_pages: a mapped block reads as zero after it and holds
// no page until written again; anything else is left alone.
TEST(HostMemory, ZeroingAMappedBlocksPagesGivesThemBack) {
  if (!host_memory_maps_large_blocks())
    GTEST_SKIP() << "host blocks come from the heap here (AddressSanitizer checks heap blocks only)";
  const size_t bytes = 4 * kMiB + 100;  // not a whole number of pages: the tail is cleared by writing
  Buffer b(host_memory());
  b.reserve(bytes);
  std::memset(b.data(), 1, bytes);
  ASSERT_GE(resident_pages(b.data(), bytes), 4 * kMiB / static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  ASSERT_TRUE(host_memory_zero_pages(b.data(), bytes));
  // (Checked before reading: a page read maps the kernel's zero page, which mincore counts.)
  EXPECT_LE(resident_pages(b.data(), bytes), 1u);  // the partial last page, written
  static_cast<unsigned char*>(b.data())[3 * kMiB] = 7;  // written again: one page back
  EXPECT_LE(resident_pages(b.data(), bytes), 2u);
  static_cast<unsigned char*>(b.data())[3 * kMiB] = 0;
  EXPECT_TRUE(all_bytes_are(b, bytes, 0));

  // Not the start of a mapped block, or a heap block: nothing happens.
  std::memset(b.data(), 1, bytes);
  EXPECT_FALSE(host_memory_zero_pages(static_cast<char*>(b.data()) + 2 * kMiB, kMiB));
  Buffer small(host_memory());
  small.reserve(64 << 10);
  std::memset(small.data(), 1, 64 << 10);
  EXPECT_FALSE(host_memory_zero_pages(small.data(), 64 << 10));
  EXPECT_TRUE(all_bytes_are(b, bytes, 1));
  EXPECT_TRUE(all_bytes_are(small, 64 << 10, 1));
}

// A new tensor of a mapped block is zero without writing it: none of its
// pages is resident until used.
TEST(HostMemory, ALargeNewTensorIsZeroAndHoldsNoPages) {
  Tensor t(Shape{1024, 1024}, DType::f32);
  if (host_memory_maps_large_blocks()) {  // checked before reading (see above)
    EXPECT_EQ(resident_pages(t.raw(), static_cast<size_t>(t.numel()) * sizeof(float)), 0u);
  }
  const float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(v[i], 0.0f) << "element " << i;
}

}  // namespace
}  // namespace sylva
