#include "sylva/train/metrics.h"

#include "sylva/core/error.h"

namespace sylva {

std::vector<int32_t> argmax_rows(const Tensor& logits) {
  SYLVA_CHECK(logits.defined() && logits.shape().rank() >= 1 && logits.shape().cols() > 0,
              "[argmax_rows] expected a tensor with at least one column, got shape ", logits.shape().str());
  const int64_t rows = logits.shape().rows(), cols = logits.shape().cols();
  std::vector<int32_t> out(static_cast<size_t>(rows));
  dispatch_floating(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = logits.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * cols;
      int64_t best = 0;
      // NaN compares false, so a NaN best is replaced by the next number explicitly.
      for (int64_t c = 1; c < cols; ++c)
        if (row[c] > row[best] || (row[best] != row[best] && row[c] == row[c])) best = c;
      out[static_cast<size_t>(r)] = static_cast<int32_t>(best);
    }
  });
  return out;
}

double accuracy(std::span<const int32_t> predicted, std::span<const int32_t> labels) {
  SYLVA_CHECK(predicted.size() == labels.size(), "[accuracy] ", predicted.size(), " predictions but ",
              labels.size(), " labels");
  int64_t labelled = 0, correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0) continue;
    ++labelled;
    correct += predicted[i] == labels[i];
  }
  return labelled ? static_cast<double>(correct) / static_cast<double>(labelled) : 0.0;
}

}  // namespace sylva
