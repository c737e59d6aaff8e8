// What the CoSA kernel benchmarks share: timing (median of repeats),
// relative error, Spearman's rank correlation, geometric means.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "sylva/core/error.h"

namespace sylva::cosa::bench {

using Clock = std::chrono::steady_clock;

struct Timing {
  double median = NAN, lo = NAN, hi = NAN;  // seconds
};

// Median of `reps` runs after one warm-up; a body slower than `long_s` is
// timed by that first run alone.
template <class F>
Timing time_it(F&& body, int reps, double long_s = 0.5) {
  auto once = [&] {
    const auto t0 = Clock::now();
    body();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  std::vector<double> t{once()};
  if (t[0] < long_s) {
    t.clear();
    for (int i = 0; i < reps; ++i) t.push_back(once());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front(), t.back()};
}

inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return scale > 0 ? err / scale : err;
}

inline std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {  // ties share their mean rank
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j);
    i = j + 1;
  }
  return r;
}

inline double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size()), mean = (n - 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxy / std::sqrt(sxx * syy);
}

struct Geomean {
  double log_sum = 0;
  int n = 0;
  void add(double ratio) {
    if (std::isfinite(ratio) && ratio > 0) log_sum += std::log(ratio), ++n;
  }
  double value() const { return n ? std::exp(log_sum / n) : NAN; }
};

// "1,10,100": the search time budgets, as multiples of CoSA's solve time.
inline std::vector<double> parse_budgets(const std::string& text) {
  std::vector<double> budgets;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    budgets.push_back(std::stod(text.substr(at, end - at)));
    SYLVA_CHECK(budgets.back() > 0, "[bench] --budgets are positive multiples, got '", text, "'");
    at = end + 1;
  }
  return budgets;
}

// The summary line of search time / CoSA time: random-5, random at each
// budget, the hybrid at the last budget (vs_search in that order).
inline void print_search_geomeans(int layers, const std::vector<Geomean>& vs_search, const std::vector<double>& budgets) {
  std::printf("%d layers; geomean of search time / CoSA time (> 1: CoSA's kernel is faster): random-5 %.2f", layers,
              vs_search[0].value());
  for (size_t i = 0; i < budgets.size(); ++i)
    std::printf(", random at %gx %.2f (%d found)", budgets[i], vs_search[i + 1].value(), vs_search[i + 1].n);
  std::printf(", hybrid at %gx %.2f\n", budgets.back(), vs_search.back().value());
}

}  // namespace sylva::cosa::bench
