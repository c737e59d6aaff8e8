// Internal: the disk entries of the NVRTC kernel cache (nvrtc_cache.h). No
// CUDA dependency, so the format is tested and fuzzed on every build.
//
// An entry is a header line "sylva-nvrtc 1 <bytes> <fnv1a>\n" (bytes in
// decimal, the FNV-1a hash of the payload as 16 lower-case hex digits),
// then exactly <bytes> bytes of payload (a CUBIN). Decoding is exact: any
// other spelling, a short or long payload, or a wrong hash is damage, so
// what decodes encodes back to the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sylva/core/hash.h"  // fnv1a, hex64

namespace sylva::cuda {

/// Entries larger than this are damage (a CUBIN of one fused kernel is KBs).
inline constexpr int64_t kMaxCacheEntryBytes = int64_t{256} << 20;

std::string encode_cache_entry(std::string_view payload);
/// The payload of `entry`, or nullopt with what is wrong in `why`.
std::optional<std::string> decode_cache_entry(std::string_view entry, std::string* why = nullptr);
/// The payload of the entry file `path`, or nullopt with what is wrong in
/// `why` (missing, unreadable, over kMaxCacheEntryBytes -- checked before
/// reading -- or damaged). Never throws for a bad file.
std::optional<std::string> read_cache_entry(const std::string& path, std::string* why = nullptr);

}  // namespace sylva::cuda
