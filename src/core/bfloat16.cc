#include "sylva/core/bfloat16.h"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>
#define SYLVA_BF16_VECTOR 1
#endif

namespace sylva {

void to_bf16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#ifdef SYLVA_BF16_VECTOR
  for (; i + 32 <= n; i += 32) {  // two 16-float vectors into one 32-value one
    const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
    _mm512_storeu_si512(dst + i, reinterpret_cast<const __m512i&>(both));
  }
  for (; i + 16 <= n; i += 16) {
    const __m256bh one = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<const __m256i&>(one));
  }
#endif
  for (; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void from_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = from_bf16(src[i]);  // a shift: the compiler vectorises it
}

bool bf16_vector_conversion() {
#ifdef SYLVA_BF16_VECTOR
  return true;
#else
  return false;
#endif
}

}  // namespace sylva
