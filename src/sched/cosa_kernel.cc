#include "sylva/sched/cosa_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "sylva/core/device.h"
#include "sylva/core/error.h"

namespace sylva::cosa {
namespace {

struct Loop {
  int dim = 0;
  int64_t factor = 1;
  int64_t stride = 1;     // index step of `dim` per iteration: the product of the inner loops' factors of `dim`
  bool parallel = false;  // a spatial loop above L1 over an output dimension: run on threads
};

// The mapping's loop nest, outermost first, and where the innermost block
// (the Registers level's loops and the spatial loops under L1) begins.
struct Nest {
  std::vector<Loop> loops;
  size_t inner_begin = 0;
  std::array<int64_t, kDims> tile{1, 1, 1, 1, 1, 1, 1};  // the innermost block's extent per dimension
};

int dim_of(char c) {
  for (int d = 0; d < kDims; ++d)
    if (kDimNames[static_cast<size_t>(d)] == c) return d;
  SYLVA_THROW("[cosa] unknown dimension '", c, "' in a loop permutation");
}

// The permutation's dimensions outermost first, with any it leaves out outermost.
std::vector<int> outer_first(const std::string& innermost_first) {
  std::vector<int> order;
  for (int d = 0; d < kDims; ++d)
    if (innermost_first.find(kDimNames[static_cast<size_t>(d)]) == std::string::npos) order.push_back(d);
  for (auto it = innermost_first.rbegin(); it != innermost_first.rend(); ++it) order.push_back(dim_of(*it));
  return order;
}

bool output_dim(int d) { return d == K || d == P || d == Q || d == N; }

Nest nest_of(const Mapping& m) {
  Nest n;
  const int levels = static_cast<int>(m.levels.size());
  for (int i = levels - 1; i >= 0; --i) {
    const LevelMapping& lm = m.levels[static_cast<size_t>(i)];
    for (int d : outer_first(lm.temporal_permutation))
      if (lm.temporal[static_cast<size_t>(d)] > 1) n.loops.push_back({d, lm.temporal[static_cast<size_t>(d)]});
    if (i == 1 || (i == 0 && levels == 1)) n.inner_begin = n.loops.size();
    for (int d : outer_first(lm.spatial_permutation))
      if (lm.spatial[static_cast<size_t>(d)] > 1)
        n.loops.push_back({d, lm.spatial[static_cast<size_t>(d)], 1, i >= 2 && output_dim(d)});
  }
  std::array<int64_t, kDims> inner{1, 1, 1, 1, 1, 1, 1};
  for (size_t l = n.loops.size(); l-- > 0;) {
    Loop& loop = n.loops[l];
    loop.stride = inner[static_cast<size_t>(loop.dim)];
    inner[static_cast<size_t>(loop.dim)] *= loop.factor;
    if (l == n.inner_begin) n.tile = inner;
  }
  if (n.inner_begin >= n.loops.size()) n.tile = {1, 1, 1, 1, 1, 1, 1};
  return n;
}

template <class T>
struct Conv {
  const Problem& p;
  const T* w;
  const T* in;
  T* out;
  int64_t wi, hi;  // input extents

  // One block of the iteration space: [b, b + e) in every dimension.
  void tile(const std::array<int64_t, kDims>& b, const std::array<int64_t, kDims>& e) const {
    const auto& B = p.bounds;
    for (int64_t n = b[N]; n < b[N] + e[N]; ++n)
      for (int64_t k = b[K]; k < b[K] + e[K]; ++k)
        for (int64_t c = b[C]; c < b[C] + e[C]; ++c)
          for (int64_t r = b[R]; r < b[R] + e[R]; ++r)
            for (int64_t s = b[S]; s < b[S] + e[S]; ++s) {
              const T wv = w[((k * B[C] + c) * B[R] + r) * B[S] + s];
              for (int64_t pp = b[P]; pp < b[P] + e[P]; ++pp) {
                T* o = out + ((n * B[K] + k) * B[P] + pp) * B[Q];
                const T* x = in + ((n * B[C] + c) * wi + pp * p.w_stride + r * p.w_dilation) * hi + s * p.h_dilation;
                const int64_t hs = p.h_stride;
                for (int64_t q = b[Q]; q < b[Q] + e[Q]; ++q) o[q] += wv * x[q * hs];
              }
            }
  }
};

// Runs the loops of `nest` outside the innermost block in order, the
// parallel ones fixed at the indices `combo` encodes.
template <class T>
void run_outer(const Conv<T>& conv, const Nest& nest, const std::vector<size_t>& par, const std::vector<size_t>& seq,
               int64_t combo) {
  std::array<int64_t, kDims> base{};
  for (size_t j = par.size(); j-- > 0;) {
    const Loop& l = nest.loops[par[j]];
    base[static_cast<size_t>(l.dim)] += (combo % l.factor) * l.stride;
    combo /= l.factor;
  }
  std::vector<int64_t> idx(seq.size(), 0);
  for (;;) {
    std::array<int64_t, kDims> b = base;
    for (size_t j = 0; j < seq.size(); ++j) {
      const Loop& l = nest.loops[seq[j]];
      b[static_cast<size_t>(l.dim)] += idx[j] * l.stride;
    }
    conv.tile(b, nest.tile);
    size_t j = seq.size();  // odometer: the innermost sequential loop moves first
    while (j > 0 && ++idx[j - 1] == nest.loops[seq[j - 1]].factor) idx[--j] = 0;
    if (j == 0) return;
  }
}

}  // namespace

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

template <class T>
void run_conv(const Problem& p, const Mapping& m, const Arch& a, const T* weights, const T* inputs, T* outputs,
              int threads) {
  check_mapping(m, p, a);
  const Nest nest = nest_of(m);
  std::vector<size_t> par, seq;
  int64_t combos = 1;
  for (size_t l = 0; l < nest.inner_begin; ++l) {
    (nest.loops[l].parallel ? par : seq).push_back(l);
    if (nest.loops[l].parallel) combos *= nest.loops[l].factor;
  }
  const auto e = input_extents(p);
  const Conv<T> conv{p, weights, inputs, outputs, e[0], e[1]};
  std::fill(outputs, outputs + output_size(p), T(0));
  const int t = static_cast<int>(std::min<int64_t>(threads > 0 ? threads : usable_cpu_cores(), combos));
#pragma omp parallel for num_threads(t) schedule(dynamic) if (t > 1)
  for (int64_t c = 0; c < combos; ++c) run_outer(conv, nest, par, seq, c);
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

template void run_conv<float>(const Problem&, const Mapping&, const Arch&, const float*, const float*, float*, int);
template void run_conv<double>(const Problem&, const Mapping&, const Arch&, const double*, const double*, double*,
                               int);
template void reference_conv<float>(const Problem&, const float*, const float*, float*);
template void reference_conv<double>(const Problem&, const double*, const double*, double*);

}  // namespace sylva::cosa
