// Program: the static parts of a model joined with vertex functions.
#pragma once

#include <memory>
#include <string>

#include "sylva/frontend/vertex_function.h"

namespace sylva {

/// A static graph whose rowed values have one row per vertex of the
/// minibatch (in vertex order: sample 0's vertices, then sample 1's, ...).
///
/// @code
/// Program p(DType::f32);
/// Symbol words = p.input_ids("words");
/// Symbol x = lookup(p.param(ps["E"]), words);
/// Symbol h = p.apply(cell, x);
/// Symbol loss = softmax_cross_entropy(matmul(h, p.param(ps["Ws"])), p.input_ids("labels"));
/// @endcode
class Program {
 public:
  explicit Program(DType dtype = DType::f32);

  /// Per-vertex int32 ids named `name`, read from each sample's InputGraph.
  Symbol input_ids(const std::string& name);
  Symbol param(const Parameter& p);
  /// Runs F at every vertex of every graph of the batch; `pull` (one row
  /// per vertex) feeds F's pull(). Returns the pushed rows in vertex order.
  Symbol apply(const VertexFunction& f, Symbol pull);
  /// For an F that pulls nothing.
  Symbol apply(const VertexFunction& f);

  const ir::Graph& graph() const { return *graph_; }
  DType dtype() const { return graph_->dtype(); }
  std::string to_dot() const;

 private:
  std::shared_ptr<ir::Graph> graph_;
};

}  // namespace sylva
