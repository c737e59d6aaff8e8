// bfloat16: the upper 16 bits of a float32 (8-bit significand, float32's
// exponent range). Sylva stores GEMM operands in it under Precision::bf16
// and computes in float32.
//
// float32 -> bfloat16 rounds to nearest, ties to even, as AVX512-BF16's
// vcvtneps2bf16, oneDNN and cuBLAS do; like that instruction it flushes
// float32 denormals to a signed zero, keeps infinities, and makes NaNs
// quiet. The scalar and the vector conversions give the same bits
// (tests/core/bfloat16_test.cc checks them against each other).
#pragma once

#include <cstdint>
#include <cstring>

namespace sylva {

inline uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);  // zero or denormal
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even (may carry into infinity)
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// dst[i] = to_bf16(src[i]) / from_bf16(src[i]) for i < n; to_bf16 runs
/// on AVX512-BF16's vcvtne2ps2bf16 where the build targets it.
void to_bf16(const float* src, uint16_t* dst, int64_t n);
void from_bf16(const uint16_t* src, float* dst, int64_t n);
/// Whether to_bf16(span) runs on AVX512-BF16 instructions in this build.
bool bf16_vector_conversion();

}  // namespace sylva
