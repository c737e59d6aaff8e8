// Host memory: a block of 1 MB or more is mapped on its own, so releasing
// it gives its pages back to the kernel at once, wherever the heap stands.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "sylva/core/buffer.h"

namespace sylva {
namespace {

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

constexpr size_t kMiB = size_t{1} << 20;

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

}  // namespace
}  // namespace sylva
