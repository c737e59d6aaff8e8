// The NVRTC kernel cache's disk entries (src/backend/cuda/cache_entry.h):
// what is written reads back; every kind of damage is reported as damage,
// with what is wrong, and never allocates what a header claims.
#include "../../src/backend/cuda/cache_entry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_util.h"

namespace sylva::cuda {
namespace {

std::string why_of(std::string_view entry) {
  std::string why;
  EXPECT_FALSE(decode_cache_entry(entry, &why).has_value()) << entry.substr(0, 60);
  return why;
}

TEST(CacheEntry, AnEncodedPayloadDecodesToItselfAndBackToTheSameBytes) {
  for (const std::string& payload : {std::string(), std::string("x"), std::string("\0\n\xff binary", 10),
                                    std::string(100000, '\x7f')}) {
    const std::string entry = encode_cache_entry(payload);
    const auto decoded = decode_cache_entry(entry);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, payload);
    EXPECT_EQ(encode_cache_entry(*decoded), entry);
  }
  // The format, spelled out (the FNV-1a offset basis is the empty text's hash).
  EXPECT_EQ(encode_cache_entry(""), "sylva-nvrtc 1 0 cbf29ce484222325\n");
}

TEST(CacheEntry, EveryKindOfDamageIsReportedAsSuch) {
  const std::string good = encode_cache_entry("cubin bytes");
  const std::string header = good.substr(0, good.find('\n') + 1);
  EXPECT_CONTAINS(why_of(""), "no 'sylva-nvrtc 1' header");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 2 0 cbf29ce484222325\n"), "no 'sylva-nvrtc 1' header");
  EXPECT_CONTAINS(why_of(good.substr(0, good.size() - 1)), "the header says 11 bytes, the entry holds 10");
  EXPECT_CONTAINS(why_of(good + "!"), "the header says 11 bytes, the entry holds 12");
  EXPECT_CONTAINS(why_of(header + "cubin bytez"), "does not match its hash");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 x 0000000000000000\n"), "not a decimal number");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 011 0000000000000000\n"), "not a decimal number");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 576460752303423488 0000000000000000\n"), "the header says 576460752303423488 bytes");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 99999999999999999999 0000000000000000\n"), "not a decimal number");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 0  cbf29ce484222325\n"), "not 16 hex digits");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 0 CBF29CE484222325\n"), "not 16 hex digits");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 0 cbf29ce484222325"), "does not end after the hash");
  EXPECT_CONTAINS(why_of("sylva-nvrtc 1 0 cbf29ce484222325\r\n"), "does not end after the hash");
}

TEST(CacheEntry, FilesAreCheckedBeforeTheyAreRead) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "sylva_cache_entry_test";
  std::filesystem::create_directories(dir);
  std::string why;
  EXPECT_FALSE(read_cache_entry((dir / "missing.cubin").string(), &why).has_value());
  EXPECT_CONTAINS(why, "cannot read it");
  const std::string good = (dir / "good.cubin").string();
  std::ofstream(good, std::ios::binary) << encode_cache_entry("payload");
  EXPECT_EQ(read_cache_entry(good).value_or("<damaged>"), "payload");
  // A sparse file over the cap is refused by its size, not read.
  const std::string big = (dir / "big.cubin").string();
  std::ofstream(big, std::ios::binary) << encode_cache_entry("x");
  std::filesystem::resize_file(big, static_cast<uintmax_t>(kMaxCacheEntryBytes) + 1);
  EXPECT_FALSE(read_cache_entry(big, &why).has_value());
  EXPECT_CONTAINS(why, "over the 256 MiB an entry may hold");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sylva::cuda
