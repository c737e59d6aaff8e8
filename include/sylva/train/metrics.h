// Small evaluation and logging helpers: argmax, accuracy, running means, timing.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "sylva/core/tensor.h"

namespace sylva {

/// Column index of the largest value of each row of a float32/float64
/// tensor viewed as [rows, cols] (the last axis is the row); ties go to the
/// first column, NaN is never chosen over a number.
///
/// @code
/// trainer.evaluate(dev);
/// std::vector<int32_t> pred = argmax_rows(trainer.executor().value(logits));
/// double acc = accuracy(pred, dev.ids("labels"));
/// @endcode
std::vector<int32_t> argmax_rows(const Tensor& logits);

/// Fraction of positions with label >= 0 where predicted == label; labels
/// of -1 (no label) are skipped. 0 when no position is labelled. Throws
/// sylva::Error if the sizes differ.
double accuracy(std::span<const int32_t> predicted, std::span<const int32_t> labels);

/// Weighted mean of a stream of values (e.g. loss per sample over an epoch).
class RunningMean {
 public:
  void add(double value, double weight = 1.0) {
    sum_ += value * weight;
    weight_ += weight;
  }
  /// 0 before the first add().
  double mean() const { return weight_ > 0.0 ? sum_ / weight_ : 0.0; }
  double sum() const { return sum_; }
  double weight() const { return weight_; }
  void reset() { sum_ = weight_ = 0.0; }

 private:
  double sum_ = 0.0;
  double weight_ = 0.0;
};

/// Wall-clock timer (steady clock) started on construction.
///
/// @code
/// Timer t;
/// for (...) n += trainer.step(b).vertices;
/// std::printf("%.0f vertices/s\n", t.rate(n));
/// @endcode
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  void reset() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  /// Items per second since the start; 0 if no time has passed.
  double rate(double items) const {
    const double s = seconds();
    return s > 0.0 ? items / s : 0.0;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sylva
