// Root accuracy of a 5-class sentiment model: fine-grained, and binary with
// the 5-class distribution collapsed (P(0)+P(1) vs P(3)+P(4)), neutral
// sentences excluded.
#pragma once

#include <cstdint>
#include <span>

#include <sylva/sylva.h>

namespace sylva::examples {

struct RootAccuracy {
  int64_t fine_correct = 0, fine_total = 0;
  int64_t binary_correct = 0, binary_total = 0;
  double fine() const { return fine_total ? static_cast<double>(fine_correct) / fine_total : 0.0; }
  double binary() const { return binary_total ? static_cast<double>(binary_correct) / binary_total : 0.0; }
};

/// Adds the roots (last vertex of each sample) of `batch` to `acc`, given
/// the logits [V, 5] of the whole batch in vertex order.
void add_root_accuracy(const GraphBatch& batch, const Tensor& logits, RootAccuracy& acc);

}  // namespace sylva::examples
