// Small pieces the examples and benchmark drivers share: optimiser by name,
// durations for progress lines, median and spread of repeated measurements.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::examples {

/// "adagrad", "adam" or "sgd" with learning rate `lr`; anything else is a
/// sylva::Error tagged with `who` (the example's name).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, double lr, const std::string& who);

/// "12m05s", or "1h02m" from an hour on.
std::string format_duration(double seconds);

/// The values measured for one point (one per repeat or per step).
struct Series {
  std::vector<double> values;

  double median() const;
  double min() const;
  double max() const;
  /// "median (min..max)" with `precision` decimals.
  std::string summary(int precision = 1) const;
};

}  // namespace sylva::examples
