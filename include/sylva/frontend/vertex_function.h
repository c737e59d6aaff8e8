// VertexFunction: the computation at one vertex, written once.
#pragma once

#include <memory>
#include <string>

#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/symbol.h"

namespace sylva {

/// F, built once as a small static dataflow graph. Messages between
/// vertices have `message_width` columns: gather(i) reads child i's
/// scattered message (zeros if absent), scatter() sends this vertex's.
///
/// @code
/// VertexFunction f("tree_fc", /*message_width=*/h);
/// Symbol l = f.gather(0), r = f.gather(1);
/// Symbol y = relu(matmul(concat({l, r}), f.param(ps["W"])) + f.param(ps["b"]));
/// f.scatter(y);
/// f.push(y);
/// @endcode
class VertexFunction {
 public:
  explicit VertexFunction(std::string name, int64_t message_width = 0, DType dtype = DType::f32);

  /// This vertex's row of the external input (at most one pull per F).
  Symbol pull(int64_t width);
  /// Child `slot`'s message; zeros where the vertex has no such child.
  Symbol gather(int64_t slot);
  /// Sum of all children's messages (any arity; zeros for a leaf).
  Symbol gather_reduce();
  /// The message this vertex sends to its parents (exactly once if F gathers).
  void scatter(Symbol message);
  /// This vertex's output row, returned by Program::apply in vertex order.
  void push(Symbol output);
  /// A parameter used inside F.
  Symbol param(const Parameter& p);

  const ir::Graph& graph() const { return *graph_; }
  std::shared_ptr<const ir::Graph> shared_graph() const { return graph_; }
  int64_t message_width() const { return message_width_; }
  std::string to_dot() const;

 private:
  std::shared_ptr<ir::Graph> graph_;
  int64_t message_width_;
};

}  // namespace sylva
