#include "sentiment_eval.h"

#include <cmath>

namespace sylva::examples {

void add_root_accuracy(const GraphBatch& batch, const Tensor& logits, RootAccuracy& acc) {
  const int64_t classes = logits.shape()[1];
  SYLVA_CHECK(classes == 5, "[sentiment_eval] expected 5 classes, got ", classes);
  const std::vector<int32_t>& labels = batch.ids("labels");
  for (int32_t s = 0; s < batch.num_samples(); ++s) {
    const int32_t root = batch.sample_offset(s + 1) - 1;
    const int32_t gold = labels[root];
    if (gold < 0) continue;
    double p[5], mx = -INFINITY, z = 0;
    for (int c = 0; c < 5; ++c) mx = std::max(mx, logits.at(root * classes + c));
    for (int c = 0; c < 5; ++c) z += (p[c] = std::exp(logits.at(root * classes + c) - mx));
    int best = 0;
    for (int c = 1; c < 5; ++c)
      if (p[c] > p[best]) best = c;
    acc.fine_correct += best == gold;
    ++acc.fine_total;
    if (gold != 2) {
      bool positive = p[3] + p[4] > p[0] + p[1];
      acc.binary_correct += positive == (gold > 2);
      ++acc.binary_total;
    }
  }
}

}  // namespace sylva::examples
