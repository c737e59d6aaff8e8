// Symbol and the op functions users compose vertex functions and programs from.
#pragma once

#include <array>
#include <vector>

#include "sylva/ir/graph.h"

namespace sylva {

/// A value in a vertex function or a program under construction: a handle
/// to one node of its graph. Ops on symbols of different graphs throw.
class Symbol {
 public:
  Symbol() = default;
  Symbol(ir::Graph* graph, ir::NodeId id) : graph_(graph), id_(id) {}
  bool valid() const { return graph_ != nullptr; }
  ir::Graph* graph() const { return graph_; }
  ir::NodeId id() const { return id_; }
  /// The value's type (dtype, rowed or fixed, shape).
  ir::ValueType type() const;
  /// Width of one row.
  int64_t cols() const { return type().cols(); }

 private:
  ir::Graph* graph_ = nullptr;
  ir::NodeId id_ = ir::kNoNode;
};

/// C = op(A)·op(B). Per-vertex (rowed) A times a parameter B is the usual
/// case; Aᵀ·B with both rowed sums over rows and gives a fixed matrix. A
/// rank-1 operand of width c is a 1 x c matrix: a matrix-vector product
/// A·v is matmul(A, v, false, true) and gives [rows, 1].
Symbol matmul(Symbol a, Symbol b, bool trans_a = false, bool trans_b = false);
/// Elementwise; a rank-1 operand broadcasts over rows.
Symbol operator+(Symbol a, Symbol b);
Symbol operator-(Symbol a, Symbol b);
Symbol operator*(Symbol a, Symbol b);
Symbol operator*(double alpha, Symbol x);
Symbol tanh(Symbol x);
Symbol sigmoid(Symbol x);
Symbol relu(Symbol x);
Symbol exp(Symbol x);
Symbol log(Symbol x);
Symbol scale(Symbol x, double alpha);
/// Joins columns.
Symbol concat(const std::vector<Symbol>& xs);
/// Columns [begin, end).
Symbol slice(Symbol x, int64_t begin, int64_t end);
/// n equal column blocks; throws if the width is not divisible by n.
std::vector<Symbol> split(Symbol x, int64_t n);
template <size_t N>
std::array<Symbol, N> split(Symbol x) {
  std::vector<Symbol> v = split(x, static_cast<int64_t>(N));
  std::array<Symbol, N> a;
  for (size_t i = 0; i < N; ++i) a[i] = v[i];
  return a;
}
/// Sum (mean) of all elements: a fixed scalar.
Symbol sum(Symbol x);
Symbol mean(Symbol x);
/// Column sums over all rows: a fixed vector.
Symbol sum_rows(Symbol x);
/// Row-wise softmax / log-softmax.
Symbol softmax(Symbol x);
Symbol log_softmax(Symbol x);
/// Cross-entropy of softmax(logits) against int32 labels (one per row;
/// label -1 = no loss at that row). Sum or mean over labelled rows.
Symbol softmax_cross_entropy(Symbol logits, Symbol labels, ir::Reduction r = ir::Reduction::sum);
/// Rows of `table` ([n, d]) at int32 `ids`; id -1 gives a zero row.
Symbol lookup(Symbol table, Symbol ids);
/// Program level: the rows of per-vertex `x` whose `ids` (a program's
/// input_ids) are >= 0, in vertex order -- so ops that only matter where a
/// vertex is labelled run on those rows alone:
///
/// @code
/// Symbol labels = program.input_ids("labels");  // -1 but at the roots
/// Symbol roots = select_rows(hidden, labels);   // one row per root
/// Symbol loss = softmax_cross_entropy(matmul(roots, Ws), select_rows(labels, labels));
/// @endcode
///
/// The result has its own row count: combining it with a value that has one
/// row per vertex is a sylva::Error when the program runs.
Symbol select_rows(Symbol x, Symbol ids);
/// Inverted dropout with drop probability p in training, identity in
/// evaluation. The mask depends on (seed, step, vertex, column), not on
/// the batching policy, so every policy computes the same values.
Symbol dropout(Symbol x, double p);

/// A node of op `op` over `inputs` (one graph) with `attrs`: the way to
/// use an op registered with ir::register_op, which has no function of its
/// own here. Shape inference runs at once, as for every op.
Symbol apply_op(ir::OpKind op, const std::vector<Symbol>& inputs, ir::Attrs attrs = {});

}  // namespace sylva
