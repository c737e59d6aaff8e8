#include "example_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sylva::examples {

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, double lr, const std::string& who) {
  if (name == "adagrad") return std::make_unique<Adagrad>(AdagradOptions{.lr = lr});
  if (name == "adam") return std::make_unique<Adam>(AdamOptions{.lr = lr});
  if (name == "sgd") return std::make_unique<Sgd>(SgdOptions{.lr = lr});
  SYLVA_THROW("[", who, "] unknown optimizer '", name, "' (adagrad, adam or sgd)");
}

std::string format_duration(double seconds) {
  char buf[32];
  const long t = std::lround(std::max(0.0, seconds));
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

double Series::median() const {
  if (values.empty()) return 0.0;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double Series::min() const { return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end()); }

double Series::max() const { return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()); }

std::string Series::summary(int precision) const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.*f (%.*f..%.*f)", precision, median(), precision, min(), precision, max());
  return buf;
}

}  // namespace sylva::examples
