// The op harness's naive reference: dense row-major matrices of doubles
// and the plain loops that every op's kernels are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "sylva/core/tensor.h"

namespace sylva::test::naive {

struct Mat {
  int64_t r = 0, c = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int64_t rows, int64_t cols) : r(rows), c(cols), v(static_cast<size_t>(rows * cols), 0.0) {}
  double& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * c + j)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * c + j)]; }
};
using Mats = std::vector<Mat>;

inline Mat to_mat(const Tensor& t) {
  Mat m(t.shape().rows(), t.shape().cols());
  for (int64_t i = 0; i < t.numel(); ++i) m.v[static_cast<size_t>(i)] = t.at(i);
  return m;
}

inline Mat mm(const Mat& a, const Mat& b, bool ta, bool tb) {
  const int64_t m = ta ? a.c : a.r, k = ta ? a.r : a.c, n = tb ? b.r : b.c;
  Mat out(m, n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) out(i, j) += (ta ? a(l, i) : a(i, l)) * (tb ? b(j, l) : b(l, j));
  return out;
}

template <class F>
Mat map(const Mat& a, F f) {
  Mat o = a;
  for (double& x : o.v) x = f(x);
  return o;
}

// Elementwise with a one-row operand broadcast over the other's rows.
template <class F>
Mat zip(const Mat& a, const Mat& b, F f) {
  Mat o(std::max(a.r, b.r), a.c);
  for (int64_t i = 0; i < o.r; ++i)
    for (int64_t j = 0; j < o.c; ++j) o(i, j) = f(a(a.r == 1 ? 0 : i, j), b(b.r == 1 ? 0 : i, j));
  return o;
}

inline Mat cols_of(const Mat& a, int64_t begin, int64_t end) {
  Mat o(a.r, end - begin);
  for (int64_t i = 0; i < a.r; ++i)
    for (int64_t j = begin; j < end; ++j) o(i, j - begin) = a(i, j);
  return o;
}

inline Mat hcat(const Mats& xs) {
  int64_t w = 0;
  for (const Mat& x : xs) w += x.c;
  Mat o(xs[0].r, w);
  int64_t at = 0;
  for (const Mat& x : xs) {
    for (int64_t i = 0; i < x.r; ++i)
      for (int64_t j = 0; j < x.c; ++j) o(i, at + j) = x(i, j);
    at += x.c;
  }
  return o;
}

inline Mat scalar(double s) {
  Mat o(1, 1);
  o.v[0] = s;
  return o;
}

inline double total(const Mat& a) { return std::accumulate(a.v.begin(), a.v.end(), 0.0); }

inline Mat col_sums(const Mat& a) {
  Mat o(1, a.c);
  for (int64_t i = 0; i < a.r; ++i)
    for (int64_t j = 0; j < a.c; ++j) o(0, j) += a(i, j);
  return o;
}

inline double row_lse(const Mat& x, int64_t i) {
  double m = x(i, 0), s = 0;
  for (int64_t j = 1; j < x.c; ++j) m = std::max(m, x(i, j));
  for (int64_t j = 0; j < x.c; ++j) s += std::exp(x(i, j) - m);
  return m + std::log(s);
}

inline Mat softmax_ref(const Mat& x, bool log_form) {
  Mat o(x.r, x.c);
  for (int64_t i = 0; i < x.r; ++i)
    for (int64_t j = 0; j < x.c; ++j) o(i, j) = log_form ? x(i, j) - row_lse(x, i) : std::exp(x(i, j) - row_lse(x, i));
  return o;
}

}  // namespace sylva::test::naive
