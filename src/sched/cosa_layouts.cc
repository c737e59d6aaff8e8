// The layouts of cosa_kernel (cosa_layouts.h) and the problems' tensor
// sizes, packed weights, channels-last conversions, GEMM problems and the
// reference convolution of the public header.
#include "cosa_layouts.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "sylva/core/device.h"
#include "sylva/core/error.h"
#include "sylva/sched/cosa_kernel.h"

namespace sylva::cosa {
namespace detail {

void transpose(const float* src, float* dst, int64_t batches, int64_t rows, int64_t cols, int threads) {
  constexpr int64_t kTile = 32;
  const int64_t rt = (rows + kTile - 1) / kTile, ct = (cols + kTile - 1) / kTile;
#pragma omp parallel for collapse(3) num_threads(threads) if (threads > 1 && batches * rows * cols > 16384)
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < rt; ++i)
      for (int64_t j = 0; j < ct; ++j) {
        const float* s = src + b * rows * cols;
        float* d = dst + b * rows * cols;
        const int64_t r1 = std::min(rows, (i + 1) * kTile), c1 = std::min(cols, (j + 1) * kTile);
        for (int64_t c = j * kTile; c < c1; ++c)
          for (int64_t r = i * kTile; r < r1; ++r) d[c * rows + r] = s[r * cols + c];
      }
}

int64_t k_blocked_size(const Problem& p) {
  const auto& B = p.bounds;
  return (B[K] + kKBlock - 1) / kKBlock * kKBlock * B[C] * B[R] * B[S];
}

void pack_k_blocked(const Problem& p, const float* w, float* out, int threads) {
  const auto& B = p.bounds;
  const int64_t crs = B[C] * B[R] * B[S], blocks = (B[K] + kKBlock - 1) / kKBlock;
#pragma omp parallel for num_threads(threads) if (threads > 1 && blocks > 1)
  for (int64_t kb = 0; kb < blocks; ++kb) {
    float* o = out + kb * crs * kKBlock;
    for (int64_t i = 0; i < crs; ++i)
      for (int64_t l = 0; l < kKBlock; ++l) {
        const int64_t k = kb * kKBlock + l;
        o[i * kKBlock + l] = k < B[K] ? w[k * crs + i] : 0.0f;
      }
  }
}

void pack_k_major(const Problem& p, const float* w, float* out, int threads) {
  transpose(w, out, 1, p.bounds[K], p.bounds[C] * p.bounds[R] * p.bounds[S], threads);
}

}  // namespace detail

std::array<int64_t, 2> input_extents(const Problem& p) {
  const auto& b = p.bounds;
  return {(b[P] - 1) * p.w_stride + (b[R] - 1) * p.w_dilation + 1, (b[Q] - 1) * p.h_stride + (b[S] - 1) * p.h_dilation + 1};
}
int64_t weight_size(const Problem& p) { return p.bounds[K] * p.bounds[C] * p.bounds[R] * p.bounds[S]; }
int64_t input_size(const Problem& p) {
  const auto e = input_extents(p);
  return p.bounds[N] * p.bounds[C] * e[0] * e[1];
}
int64_t output_size(const Problem& p) { return p.bounds[N] * p.bounds[K] * p.bounds[P] * p.bounds[Q]; }

PackedWeights pack_weights(const Problem& p, const float* weights, int threads) {
  PackedWeights w;
  w.problem = p;
  w.plain = weights;
  const int all = threads > 0 ? threads : usable_cpu_cores();
  w.packed.resize(static_cast<size_t>(detail::k_blocked_size(p)));
  detail::pack_k_blocked(p, weights, w.packed.data(), all);
  w.k_major.resize(static_cast<size_t>(weight_size(p)));
  detail::pack_k_major(p, weights, w.k_major.data(), all);
  return w;
}

void inputs_to_channels_last(const Problem& p, const float* nchw, float* nhwc, int threads) {
  const auto e = input_extents(p);
  detail::transpose(nchw, nhwc, p.bounds[N], p.bounds[C], e[0] * e[1], threads > 0 ? threads : usable_cpu_cores());
}

Problem gemm_problem(int64_t m, int64_t n, int64_t k, const std::string& name) {
  SYLVA_CHECK(m >= 1 && n >= 1 && k >= 1, "[cosa] GEMM '", name, "': bounds m = ", m, ", n = ", n, ", k = ", k,
              " must each be at least 1");
  Problem p;
  p.name = name;
  p.bounds = {1, 1, 1, 1, 1, 1, 1};
  p.bounds[N] = m;
  p.bounds[K] = n;
  p.bounds[C] = k;
  return p;
}

Problem parse_gemm(const std::string& text) {
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  SYLVA_CHECK(std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) == 3,
              "[cosa] a GEMM is m x n x k, like 64x640x256; got '", text, "'");
  return gemm_problem(m, n, k, "gemm_" + text);
}

bool is_gemm(const Problem& p) {
  const auto& b = p.bounds;
  return b[P] == 1 && b[Q] == 1 && b[R] == 1 && b[S] == 1;
}

// Written on its own (not through Conv::tile) so that it checks the tiled walk.
template <class T>
void reference_conv(const Problem& p, const T* weights, const T* inputs, T* outputs) {
  const auto& b = p.bounds;
  const auto [wi, hi] = input_extents(p);
  for (int64_t n = 0; n < b[N]; ++n)
    for (int64_t k = 0; k < b[K]; ++k)
      for (int64_t x = 0; x < b[P]; ++x)
        for (int64_t y = 0; y < b[Q]; ++y) {
          T acc = 0;
          for (int64_t c = 0; c < b[C]; ++c)
            for (int64_t r = 0; r < b[R]; ++r)
              for (int64_t s = 0; s < b[S]; ++s) {
                const int64_t u = x * p.w_stride + r * p.w_dilation, v = y * p.h_stride + s * p.h_dilation;
                acc += weights[((k * b[C] + c) * b[R] + r) * b[S] + s] * inputs[((n * b[C] + c) * wi + u) * hi + v];
              }
          outputs[((n * b[K] + k) * b[P] + x) * b[Q] + y] = acc;
        }
}

template void reference_conv<float>(const Problem&, const float*, const float*, float*);
template void reference_conv<double>(const Problem&, const double*, const double*, double*);

}  // namespace sylva::cosa
