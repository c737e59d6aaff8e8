// A small non-cryptographic hash for fingerprints and cache keys (the NVRTC
// kernel cache, replica checks in data-parallel training): 64-bit FNV-1a.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sylva {

/// 64-bit FNV-1a of `bytes`, continuing from `h` (the offset basis by default).
uint64_t fnv1a(std::string_view bytes, uint64_t h = 14695981039346656037ull);
/// v as 16 lower-case hex digits.
std::string hex64(uint64_t v);

}  // namespace sylva
