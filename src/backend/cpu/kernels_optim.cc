// Optimiser updates and gradient sums of squares on the CPU: the math of
// every Optimizer (the host step and the device step run the same rules;
// the CUDA kernels in kernels/cuda/optim.cu repeat them).
#include <cmath>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

// Calls fn(begin, end) for each element range an update covers.
template <class Fn>
void for_each_range(const MatView& w, std::span<const int32_t> rows, Fn&& fn) {
  if (rows.empty()) return fn(int64_t{0}, w.numel());
  for (int32_t r : rows) fn(static_cast<int64_t>(r) * w.cols, static_cast<int64_t>(r + 1) * w.cols);
}

// One rule over the covered elements; the rule is a template argument so
// the element loop has no branch on it.
template <class T, ParamUpdate::Rule R, bool kDecayOrScale>
void update_with(const ParamUpdate& u) {
  using Rule = ParamUpdate::Rule;
  T* w = u.w.as<T>();
  const T* g = u.g.as<const T>();
  T* s0 = u.s0.data ? u.s0.as<T>() : nullptr;
  T* s1 = u.s1.data ? u.s1.as<T>() : nullptr;
  const T rate = static_cast<T>(u.lr), a = static_cast<T>(u.a), b = static_cast<T>(u.b), eps = static_cast<T>(u.eps);
  const T c1 = static_cast<T>(u.c1), c2 = static_cast<T>(u.c2), decay = static_cast<T>(u.decay);
  const T scale = static_cast<T>(u.scale);
  const bool decayed = u.decay != 0.0;
  for_each_range(u.w, u.rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T gi = g[i];
      if constexpr (kDecayOrScale) {
        if (decayed) gi += decay * w[i];
        gi *= scale;
      }
      if constexpr (R == Rule::sgd) {
        w[i] -= rate * gi;
      } else if constexpr (R == Rule::momentum) {
        s0[i] = a * s0[i] + gi;
        w[i] -= rate * s0[i];
      } else if constexpr (R == Rule::adagrad) {
        s0[i] += gi * gi;
        w[i] -= rate * gi / (std::sqrt(s0[i]) + eps);
      } else {
        s0[i] = a * s0[i] + (1 - a) * gi;
        s1[i] = b * s1[i] + (1 - b) * gi * gi;
        w[i] -= rate * (s0[i] * c1) / (std::sqrt(s1[i] * c2) + eps);
      }
    }
  });
}

template <class T, bool kDecayOrScale>
void update(const ParamUpdate& u) {
  using Rule = ParamUpdate::Rule;
  switch (u.rule) {
    case Rule::sgd: return update_with<T, Rule::sgd, kDecayOrScale>(u);
    case Rule::momentum: return update_with<T, Rule::momentum, kDecayOrScale>(u);
    case Rule::adagrad: return update_with<T, Rule::adagrad, kDecayOrScale>(u);
    case Rule::adam: return update_with<T, Rule::adam, kDecayOrScale>(u);
  }
}

template <class T>
double sum_squares(MatView gv, MatView wv, double decay, std::span<const int32_t> rows) {
  const T* g = gv.as<const T>();
  const T* w = wv.data ? wv.as<const T>() : nullptr;
  const T d = static_cast<T>(decay);
  double sq = 0.0;
  for_each_range(gv, rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T gi = g[i];
      if (decay != 0.0) gi += d * w[i];
      sq += static_cast<double>(gi) * static_cast<double>(gi);
    }
  });
  return sq;
}

}  // namespace

void update_parameter(const ParamUpdate& u) {
  SYLVA_ASSERT(u.w.numel() == u.g.numel() && u.w.dtype == u.g.dtype, "update_parameter: w and g differ");
  // The host step passes decay 0 and scale 1 (Trainer applied both to the
  // gradient already): its loop then has neither.
  const bool plain = u.decay == 0.0 && u.scale == 1.0;
  dispatch_floating(u.w.dtype, [&](auto tag) {
    if (plain)
      update<decltype(tag), false>(u);
    else
      update<decltype(tag), true>(u);
  });
}

double sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows) {
  SYLVA_ASSERT(decay == 0.0 || (w.data && w.numel() == g.numel()), "sum_squares: decay needs w");
  double sq = 0.0;
  dispatch_floating(g.dtype, [&](auto tag) { sq = sum_squares<decltype(tag)>(g, w, decay, rows); });
  return sq;
}

}  // namespace sylva::cpu
