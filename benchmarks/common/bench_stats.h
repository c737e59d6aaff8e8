// Repeated measurements of one benchmark point: median and spread, as the
// CLI drivers report them (docs/benchmarks.md).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace sylva::bench {

/// The values measured for one point (one per repeat).
struct Series {
  std::vector<double> values;

  double median() const {
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0.0;
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  double min() const { return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end()); }
  double max() const { return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()); }

  /// "median (min..max)" with `precision` decimals.
  std::string summary(int precision = 1) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.*f (%.*f..%.*f)", precision, median(), precision, min(), precision, max());
    return buf;
  }
};

}  // namespace sylva::bench
