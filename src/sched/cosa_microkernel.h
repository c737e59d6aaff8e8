// The register-tile micro-kernel of cosa_kernel (internal to sylva_sched).
//
// One call computes a grid of NV x NS float32 accumulator vectors held in
// registers: acc[v][s] += vec[v] * scalar[s] summed over the block's
// reduction points. Each point loads NV vectors of the "vector operand"
// (input rows along Q, or packed weights along K) and broadcasts NS
// scalars of the other operand, so a point costs NV + NS loads for
// NV * NS fused multiply-adds. The accumulators are read from and written
// back to the outputs once per call. Lanes past a vector's `lanes` count
// are masked off (a block's extent need not be a multiple of the SIMD
// width). The width is this build's: AVX-512 (16 lanes) or AVX2 with FMA
// (8); without either, kSimdWidth is 0 and cosa_kernel uses its plain loop.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace sylva::cosa::detail {

#if defined(__AVX512F__)
struct Simd {
  static constexpr int kWidth = 16;
  using V = __m512;
  using Mask = __mmask16;
  static Mask mask(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
  static __m512i index(int64_t stride) {
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32(static_cast<int>(stride)));
  }
  static V zero() { return _mm512_setzero_ps(); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V gather(const float* p, __m512i idx, Mask m) {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, p, 4);
  }
  static void store(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static void scatter(float* p, __m512i idx, Mask m, V v) { _mm512_mask_i32scatter_ps(p, m, idx, v, 4); }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Simd {
  static constexpr int kWidth = 8;
  using V = __m256;
  using Mask = __m256i;
  static Mask mask(int lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
  }
  static __m256i index(int64_t stride) {
    return _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(static_cast<int>(stride)));
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V gather(const float* p, __m256i idx, Mask m) {
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx, _mm256_castsi256_ps(m), 4);
  }
  static void store(float* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  static void scatter(float* p, __m256i idx, Mask m, V v) {  // AVX2 has no scatter
    alignas(32) float lane[8];
    alignas(32) int at[8], on[8];
    _mm256_store_ps(lane, v);
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), idx);
    _mm256_store_si256(reinterpret_cast<__m256i*>(on), m);
    for (int i = 0; i < 8; ++i)
      if (on[i]) p[at[i]] = lane[i];
  }
};
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
constexpr int kSimdWidth = Simd::kWidth;
#else
constexpr int kSimdWidth = 0;
#endif

constexpr int kMaxVectors = 4;  // NV: vector-operand items per call
constexpr int kMaxScalars = 8;  // NS: scalar-operand items per call
/// The largest NS for NV vectors: NV * NS accumulators plus NV operand
/// vectors and one broadcast fit AVX-512's 32 registers.
constexpr int max_scalars(int nv) { return nv == 4 ? 6 : kMaxScalars; }

/// One step of the outer reduction loop: the offsets of the vector and the
/// scalar operand.
struct RedOffset {
  int64_t v = 0, s = 0;
};

/// One call's operands. Output (v, s) is out + ov[v] + os[s], its lanes
/// `olane` apart. The reduction is an outer list of offsets (`outer`) times
/// an inner run of `inner` points `vstep` / `sstep` apart (the block's C
/// loop): point (o, i) of vector item v is vbase + vrel[v] + outer[o].v +
/// i·vstep, its lanes `vlane` apart; of scalar item s, sbase + srel[s] +
/// outer[o].s + i·sstep. The arrays point at the call's first items.
struct MicroCall {
  const float* vbase = nullptr;
  const float* sbase = nullptr;
  const int64_t* vrel = nullptr;
  const int64_t* ov = nullptr;
  const int* lanes = nullptr;
  const int64_t* srel = nullptr;
  const int64_t* os = nullptr;
  float* out = nullptr;
  int64_t olane = 1, vlane = 1;
  const RedOffset* outer = nullptr;
  int64_t nouter = 0, inner = 0, vstep = 0, sstep = 0;
  bool fresh = false;
};

using MicroFn = void (*)(const MicroCall&);

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// kFull: every vector has all its lanes (plain loads; masked ones are
// slower in the inner loop).
template <int NV, int NS, bool kVecContiguous, bool kOutContiguous, bool kFull>
void micro_kernel(const MicroCall& c) {
  typename Simd::Mask m[NV];
  typename Simd::V acc[NV][NS];
  const auto vidx = Simd::index(c.vlane), oidx = Simd::index(c.olane);
  float* out[NV][NS];  // in locals: the stores below need not reread the call's arrays
  for (int v = 0; v < NV; ++v)
    for (int s = 0; s < NS; ++s) out[v][s] = c.out + c.ov[v] + c.os[s];
  for (int v = 0; v < NV; ++v) {
    m[v] = Simd::mask(c.lanes[v]);
    for (int s = 0; s < NS; ++s) {
      const float* o = out[v][s];
      if (c.fresh)
        acc[v][s] = Simd::zero();
      else
        acc[v][s] = kOutContiguous ? Simd::load(o, m[v]) : Simd::gather(o, oidx, m[v]);
    }
  }
  int64_t srel[NS];
  for (int s = 0; s < NS; ++s) srel[s] = c.srel[s];
  for (int64_t o = 0; o < c.nouter; ++o) {
    const float* vp[NV];
    for (int v = 0; v < NV; ++v) vp[v] = c.vbase + c.vrel[v] + c.outer[o].v;
    const float* sp = c.sbase + c.outer[o].s;
    for (int64_t i = 0; i < c.inner; ++i, sp += c.sstep) {
      typename Simd::V x[NV];
      for (int v = 0; v < NV; ++v) {
        if constexpr (!kVecContiguous)
          x[v] = Simd::gather(vp[v], vidx, m[v]);
        else if constexpr (kFull)
          x[v] = Simd::load(vp[v]);
        else
          x[v] = Simd::load(vp[v], m[v]);
        // Held in a register: else GCC folds the load into each of the NS
        // FMAs that read it, NV * NS loads a step instead of NV (measured:
        // load-bound on Zen 4, whose 512-bit loads issue one a cycle).
        __asm__("" : "+v"(x[v]));
        vp[v] += c.vstep;
      }
      for (int s = 0; s < NS; ++s) {
        const typename Simd::V w = Simd::bcast(sp + srel[s]);
        for (int v = 0; v < NV; ++v) acc[v][s] = Simd::fma(x[v], w, acc[v][s]);
      }
    }
  }
  for (int v = 0; v < NV; ++v)
    for (int s = 0; s < NS; ++s) {
      float* o = out[v][s];
      if constexpr (kOutContiguous)
        Simd::store(o, m[v], acc[v][s]);
      else
        Simd::scatter(o, oidx, m[v], acc[v][s]);
    }
}

template <int NV, int NS>
void micro_dispatch(const MicroCall& c) {
  bool full = true;
  for (int v = 0; v < NV; ++v) full = full && c.lanes[v] == Simd::kWidth;
  if (c.vlane == 1 && c.olane == 1) {
    if (full) micro_kernel<NV, NS, true, true, true>(c);
    else micro_kernel<NV, NS, true, true, false>(c);
  } else if (c.vlane == 1) {
    if (full) micro_kernel<NV, NS, true, false, true>(c);
    else micro_kernel<NV, NS, true, false, false>(c);
  } else if (c.olane == 1) {
    micro_kernel<NV, NS, false, true, false>(c);
  } else {
    micro_kernel<NV, NS, false, false, false>(c);
  }
}

template <int NV, size_t... S>
constexpr std::array<MicroFn, kMaxScalars> micro_row(std::index_sequence<S...>) {
  return {(static_cast<int>(S) + 1 <= max_scalars(NV) ? &micro_dispatch<NV, static_cast<int>(S) + 1> : nullptr)...};
}

/// micro_table[nv - 1][ns - 1]: the kernel for nv vectors and ns scalars
/// (null past max_scalars(nv)).
inline constexpr std::array<std::array<MicroFn, kMaxScalars>, kMaxVectors> micro_table{
    micro_row<1>(std::make_index_sequence<kMaxScalars>{}), micro_row<2>(std::make_index_sequence<kMaxScalars>{}),
    micro_row<3>(std::make_index_sequence<kMaxScalars>{}), micro_row<4>(std::make_index_sequence<kMaxScalars>{})};
#endif

}  // namespace sylva::cosa::detail
