// Internal: each op-family file fills its entries of the registry table,
// plus shared helpers for shape inference.
#pragma once

#include <array>
#include <span>

#include "sylva/core/error.h"
#include "sylva/ir/graph.h"

namespace sylva::ir::detail {

using Table = std::array<OpDef, kMaxOpKinds>;

void define_math_ops(Table& t);
void define_structure_ops(Table& t);
void define_boundary_ops(Table& t);

inline OpDef& entry(Table& t, OpKind k) { return t[static_cast<size_t>(k)]; }

/// Rows of a value viewed as a matrix: -1 for rowed (dynamic).
inline int64_t matrix_rows(const ValueType& v) { return v.rowed ? -1 : v.fixed_rows(); }

/// Shape of a value with `cols` columns and the row structure of `like`.
inline Shape with_cols(const ValueType& like, int64_t cols) {
  if (like.rowed || like.shape.rank() <= 1) return Shape{cols};
  return Shape{like.fixed_rows(), cols};
}

void require_float(const Node& n, const ValueType& v, const char* what);
/// Type of an elementwise binary op with rank-1 broadcasting.
ValueType broadcast_type(const Node& n, const ValueType& a, const ValueType& b);
/// For an operand of a broadcasting op: reduce `grad` (shaped like the
/// output) to the operand's type (sums over rows when it was broadcast).
NodeId reduce_to(GradContext& ctx, NodeId grad, const ValueType& operand);

}  // namespace sylva::ir::detail
