// Optimiser updates and gradient sums of squares on the CPU: the math of
// every Optimizer (the host step and the device step run the same rules;
// the CUDA kernels in kernels/cuda/optim.cu repeat them).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

// Calls fn(begin, end) for each element range an update covers.
template <class Fn>
void for_each_range(const MatView& w, std::span<const int32_t> rows, Fn&& fn) {
  if (rows.empty()) return fn(int64_t{0}, w.numel());
  for (int32_t r : rows) fn(static_cast<int64_t>(r) * w.cols, static_cast<int64_t>(r + 1) * w.cols);
}

// Below this many elements an update runs on the calling thread: the fork
// and join cost more than the work.
constexpr int64_t kParallelElements = int64_t{1} << 16;

// for_each_range over `threads` OpenMP threads, each taking a contiguous
// share of the elements (dense) or of the rows (row-sparse). Every element
// is updated by exactly one thread with the same arithmetic, so the result
// does not depend on `threads`.
template <class Fn>
void for_each_range_parallel(const MatView& w, std::span<const int32_t> rows, int threads, Fn&& fn) {
  const int64_t covered = rows.empty() ? w.numel() : static_cast<int64_t>(rows.size()) * w.cols;
  if (threads <= 1 || covered < kParallelElements) return for_each_range(w, rows, fn);
  if (rows.empty()) {
    const int64_t n = w.numel(), share = (n + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = std::min(n, t * share), end = std::min(n, begin + share);
      if (begin < end) fn(begin, end);
    }
    return;
  }
  const auto n = static_cast<int64_t>(rows.size());
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const int32_t r = rows[static_cast<size_t>(k)];
    fn(static_cast<int64_t>(r) * w.cols, static_cast<int64_t>(r + 1) * w.cols);
  }
}

// One rule's arrays and constants, as the update of one range reads them.
template <class T>
struct RuleArgs {
  T* w;
  const T* g;
  T* s0;
  T* s1;
  T rate, a, b, eps, c1, c2, decay, scale;
  bool decayed;
};

// One rule over elements [begin, end); the rule is a template argument so
// the element loop has no branch on it. Everything is copied into locals
// (parameters) first: loads of a shared struct inside the loop could alias
// the stores through w, and GCC would not vectorise it.
// kZeroG: g is known to be zero over the range and is not read (the same
// arithmetic with a constant +0, so the same bits).
template <class T, ParamUpdate::Rule R, bool kDecayOrScale, bool kZeroG = false>
void update_range(T* __restrict w, const T* __restrict g, T* __restrict s0, T* __restrict s1, const T rate,
                  const T a, const T b, const T eps, const T c1, const T c2, const T decay, const T scale,
                  const bool decayed, const int64_t begin, const int64_t end) {
  using Rule = ParamUpdate::Rule;
  for (int64_t i = begin; i < end; ++i) {
    T gi = kZeroG ? T(0) : g[i];
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
}

template <class T, ParamUpdate::Rule R, bool kDecayOrScale>
void update_with(const ParamUpdate& u, int threads) {
  const RuleArgs<T> k{.w = u.w.as<T>(), .g = u.g.as<const T>(), .s0 = u.s0.data ? u.s0.as<T>() : nullptr,
                      .s1 = u.s1.data ? u.s1.as<T>() : nullptr, .rate = static_cast<T>(u.lr),
                      .a = static_cast<T>(u.a), .b = static_cast<T>(u.b), .eps = static_cast<T>(u.eps),
                      .c1 = static_cast<T>(u.c1), .c2 = static_cast<T>(u.c2), .decay = static_cast<T>(u.decay),
                      .scale = static_cast<T>(u.scale), .decayed = u.decay != 0.0};
  const auto run = [&k](auto zero_g, int64_t begin, int64_t end) {
    if (begin < end)
      update_range<T, R, kDecayOrScale, decltype(zero_g)::value>(k.w, k.g, k.s0, k.s1, k.rate, k.a, k.b, k.eps, k.c1,
                                                                  k.c2, k.decay, k.scale, k.decayed, begin, end);
  };
  // A dense update of a row-sparse gradient (an embedding table under
  // Adam or momentum): outside the gradient's rows g is zero and not read,
  // one of Adam's seven streams of memory less. A decayed gradient is not
  // zero there.
  const std::span<const int32_t> rows = u.grad_rows;
  if (u.grad_rows_known && u.rows.empty() && !k.decayed && std::is_sorted(rows.begin(), rows.end())) {
    const int64_t cols = u.w.cols;
    for_each_range_parallel(u.w, {}, threads, [&](int64_t begin, int64_t end) {
      auto r = std::lower_bound(rows.begin(), rows.end(), static_cast<int32_t>(begin / std::max<int64_t>(cols, 1)));
      int64_t at = begin;
      for (; r != rows.end() && static_cast<int64_t>(*r) * cols < end; ++r) {
        const int64_t rb = std::max(at, static_cast<int64_t>(*r) * cols), re = std::min(end, (*r + int64_t{1}) * cols);
        run(std::true_type{}, at, rb);
        run(std::false_type{}, rb, re);
        at = std::max(at, re);
      }
      run(std::true_type{}, at, end);
    });
    return;
  }
  for_each_range_parallel(u.w, u.rows, threads,
                          [&run](int64_t begin, int64_t end) { run(std::false_type{}, begin, end); });
}

template <class T, bool kDecayOrScale>
void update(const ParamUpdate& u, int threads) {
  using Rule = ParamUpdate::Rule;
  switch (u.rule) {
    case Rule::sgd: return update_with<T, Rule::sgd, kDecayOrScale>(u, threads);
    case Rule::momentum: return update_with<T, Rule::momentum, kDecayOrScale>(u, threads);
    case Rule::adagrad: return update_with<T, Rule::adagrad, kDecayOrScale>(u, threads);
    case Rule::adam: return update_with<T, Rule::adam, kDecayOrScale>(u, threads);
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

void update_parameter(const ParamUpdate& u, int threads) {
  SYLVA_ASSERT(u.w.numel() == u.g.numel() && u.w.dtype == u.g.dtype, "update_parameter: w and g differ");
  // The host step passes decay 0 and scale 1 (Trainer applied both to the
  // gradient already): its loop then has neither.
  const bool plain = u.decay == 0.0 && u.scale == 1.0;
  dispatch_floating(u.w.dtype, [&](auto tag) {
    if (plain)
      update<decltype(tag), false>(u, threads);
    else
      update<decltype(tag), true>(u, threads);
  });
}

double sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows) {
  SYLVA_ASSERT(decay == 0.0 || (w.data && w.numel() == g.numel()), "sum_squares: decay needs w");
  double sq = 0.0;
  dispatch_floating(g.dtype, [&](auto tag) { sq = sum_squares<decltype(tag)>(g, w, decay, rows); });
  return sq;
}

}  // namespace sylva::cpu
