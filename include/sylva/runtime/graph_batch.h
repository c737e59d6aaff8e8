// GraphBatch: the graphs of one minibatch, joined with global vertex ids.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "sylva/runtime/input_graph.h"

namespace sylva {

/// The samples of a minibatch as one graph: sample s's vertex v becomes
/// global vertex sample_offset(s) + v (this is "vertex order"). The
/// InputGraphs must outlive the batch (it keeps pointers for messages).
class GraphBatch {
 public:
  GraphBatch() = default;
  explicit GraphBatch(std::vector<const InputGraph*> samples);
  /// Convenience: all graphs of a contiguous range.
  static GraphBatch of(std::span<const InputGraph> samples);
  /// A temporary vector would die before the batch: a compile error, not a
  /// dangling batch.
  static GraphBatch of(std::vector<InputGraph>&& samples) = delete;
  /// The batch of samples `samples` (indices into this batch, each at most
  /// once) in that order, whose random numbers (dropout) are drawn as in
  /// this batch: vertex_keys() maps each of its vertices to this batch's id
  /// of that vertex. Data-parallel ranks run subsets of one global batch.
  GraphBatch subset(std::span<const int> samples) const;
  /// Per vertex, the id random ops key on (see subset()); empty: the
  /// vertex ids themselves.
  const std::vector<int32_t>& vertex_keys() const { return vertex_keys_; }

  int32_t num_samples() const { return static_cast<int32_t>(samples_.size()); }
  int32_t num_vertices() const { return static_cast<int32_t>(offsets_.size() - 1); }
  int32_t sample_offset(int32_t s) const { return sample_offsets_.at(s); }
  /// Sample holding global vertex v.
  int32_t sample_of(int32_t v) const;
  const InputGraph& sample(int32_t s) const { return *samples_.at(s); }
  /// Children of global vertex v in slot order (global ids, -1 = absent).
  std::span<const int32_t> children(int32_t v) const {
    return {children_.data() + offsets_[v], children_.data() + offsets_[v + 1]};
  }
  int32_t max_arity() const { return max_arity_; }
  /// Per-vertex ids `name` of all samples, concatenated in vertex order.
  /// Throws sylva::Error naming the first sample that lacks them.
  const std::vector<int32_t>& ids(const std::string& name) const;
  /// "sample 3 (train.txt:17) vertex 5" for error messages.
  std::string describe_vertex(int32_t v) const;

 private:
  std::vector<const InputGraph*> samples_;
  std::vector<int32_t> sample_offsets_{0};
  std::vector<int32_t> offsets_{0};
  std::vector<int32_t> children_;
  int32_t max_arity_ = 0;
  std::vector<int32_t> vertex_keys_;
  mutable std::map<std::string, std::vector<int32_t>> ids_;
};

}  // namespace sylva
