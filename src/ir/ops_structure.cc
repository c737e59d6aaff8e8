// Shape inference and gradient rules of concat/slice, reductions,
// broadcast and embedding lookup.
#include "op_defs.h"

namespace sylva::ir::detail {
namespace {

using T = std::span<const ValueType>;

// ---- concat / slice / assemble ----------------------------------------------------
ValueType infer_concat(const Node& n, T in) {
  int64_t cols = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    require_float(n, in[k], "input");
    SYLVA_CHECK(in[k].dtype == in[0].dtype && in[k].rowed == in[0].rowed &&
                    (in[k].rowed || in[k].shape.rows() == in[0].shape.rows()),
                "[concat] input ", k, " is ", in[k].str(), " but input 0 is ", in[0].str(),
                " (inputs must agree in dtype and rows)");
    cols += in[k].cols();
  }
  return {in[0].dtype, in[0].rowed, with_cols(in[0], cols)};
}

void grad_concat(GradContext& c) {
  int64_t begin = 0;
  for (size_t k = 0; k < c.node().inputs.size(); ++k) {
    int64_t w = c.type_of(c.input(static_cast<int>(k))).cols();
    if (c.needs_grad(static_cast<int>(k))) {
      Attrs s;
      s.begin = begin;
      s.end = begin + w;
      c.add_grad(static_cast<int>(k), c.emit(OpKind::Slice, {c.dy()}, s));
    }
    begin += w;
  }
}

ValueType infer_slice(const Node& n, T in) {
  require_float(n, in[0], "input");
  const Attrs& a = n.attrs;
  SYLVA_CHECK(0 <= a.begin && a.begin < a.end && a.end <= in[0].cols(), "[slice] columns [", a.begin, ", ", a.end,
              ") out of range for ", in[0].str());
  return {in[0].dtype, in[0].rowed, with_cols(in[0], a.end - a.begin)};
}

void grad_slice(GradContext& c) {
  if (!c.needs_grad(0)) return;
  Attrs a;
  a.ranges = {c.node().attrs.begin, c.node().attrs.end};
  a.width = c.type_of(c.input(0)).cols();
  c.add_grad(0, c.emit(OpKind::Assemble, {c.dy()}, a));
}

// Assemble: output of `width` columns, zero except input k added at columns
// ranges[2k]..ranges[2k+1]. The gradient of slices (several slices of one
// value become one Assemble).
ValueType infer_assemble(const Node& n, T in) {
  const Attrs& a = n.attrs;
  SYLVA_CHECK(a.ranges.size() == 2 * in.size(), "[assemble] needs one range per input");
  for (size_t k = 0; k < in.size(); ++k) {
    require_float(n, in[k], "input");
    SYLVA_CHECK(in[k].rowed == in[0].rowed && in[k].dtype == in[0].dtype, "[assemble] inputs disagree");
    SYLVA_CHECK(0 <= a.ranges[2 * k] && a.ranges[2 * k + 1] <= a.width &&
                    a.ranges[2 * k + 1] - a.ranges[2 * k] == in[k].cols(),
                "[assemble] range ", k, " does not fit input ", in[k].str());
  }
  return {in[0].dtype, in[0].rowed, with_cols(in[0], a.width)};
}

// ---- reductions and broadcast ----------------------------------------------------------
ValueType infer_sum(const Node& n, T in) {
  require_float(n, in[0], "input");
  return {in[0].dtype, false, Shape{1}};
}

void grad_sum(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::Broadcast, {c.dy(), c.input(0)}));
}

void grad_mean(GradContext& c) {
  if (!c.needs_grad(0)) return;
  Attrs a;
  a.reduction = Reduction::mean;
  c.add_grad(0, c.emit(OpKind::Broadcast, {c.dy(), c.input(0)}, a));
}

ValueType infer_sum_rows(const Node& n, T in) {
  require_float(n, in[0], "input");
  return {in[0].dtype, false, Shape{in[0].cols()}};
}

void grad_sum_rows(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::Broadcast, {c.dy(), c.input(0)}));
}

// Broadcast(v, like): v (1 element, or a vector of like's width) repeated
// to like's shape; reduction=mean also divides by like's element count.
ValueType infer_broadcast(const Node& n, T in) {
  const ValueType &v = in[0], &like = in[1];
  require_float(n, v, "value");
  SYLVA_CHECK(!v.rowed && (v.shape.numel() == 1 || v.shape.numel() == like.cols()),
              "[broadcast] value ", v.str(), " cannot broadcast to ", like.str());
  return {v.dtype, like.rowed, like.shape};
}

// ---- lookup --------------------------------------------------------------------
ValueType infer_lookup(const Node& n, T in) {
  const ValueType &table = in[0], &ids = in[1];
  require_float(n, table, "table");
  SYLVA_CHECK(!table.rowed && table.shape.rank() == 2, "[lookup] table must be a fixed matrix [n, d], got ",
              table.str());
  SYLVA_CHECK(ids.dtype == DType::i32 && ids.cols() == 1, "[lookup] ids must be int32 with one column, got ",
              ids.str());
  if (ids.rowed) return {table.dtype, true, Shape{table.cols()}};
  return {table.dtype, false, Shape{ids.shape.rows(), table.cols()}};
}

void grad_lookup(GradContext& c) {
  if (!c.needs_grad(0)) return;
  Attrs a;
  a.width = c.type_of(c.input(0)).fixed_rows();
  c.add_grad(0, c.emit(OpKind::LookupGrad, {c.dy(), c.input(1)}, a));
}

// LookupGrad(dy, ids): a [width, d] matrix, zero except rows ids[i] += dy[i].
ValueType infer_lookup_grad(const Node& n, T in) {
  require_float(n, in[0], "dy");
  SYLVA_CHECK(in[1].dtype == DType::i32, "[lookup_grad] ids must be int32");
  return {in[0].dtype, false, Shape{n.attrs.width, in[0].cols()}};
}

}  // namespace

void define_structure_ops(Table& t) {
  entry(t, OpKind::Concat) = {"concat", OpFlag::fusible, 1, -1, infer_concat, grad_concat, Zeros::all, OpCategory::data_movement};
  entry(t, OpKind::Slice) = {"slice", OpFlag::fusible, 1, 1, infer_slice, grad_slice, Zeros::input0, OpCategory::data_movement};
  entry(t, OpKind::Assemble) = {"assemble", OpFlag::internal | OpFlag::fusible, 1, -1, infer_assemble, nullptr, Zeros::all, OpCategory::data_movement};
  entry(t, OpKind::Sum) = {"sum", OpFlag::none, 1, 1, infer_sum, grad_sum, Zeros::input0, OpCategory::reduction};
  entry(t, OpKind::Mean) = {"mean", OpFlag::none, 1, 1, infer_sum, grad_mean, Zeros::never, OpCategory::reduction};
  entry(t, OpKind::SumRows) = {"sum_rows", OpFlag::none, 1, 1, infer_sum_rows, grad_sum_rows, Zeros::input0, OpCategory::reduction};
  entry(t, OpKind::Broadcast) = {"broadcast", OpFlag::internal, 2, 2, infer_broadcast, nullptr, Zeros::input0, OpCategory::data_movement};
  entry(t, OpKind::Lookup) = {"lookup", OpFlag::none, 2, 2, infer_lookup, grad_lookup, Zeros::never, OpCategory::data_movement, Ids::rows_of_input0};
  entry(t, OpKind::LookupGrad) = {"lookup_grad", OpFlag::internal, 2, 2, infer_lookup_grad, nullptr, Zeros::never, OpCategory::data_movement};
}

}  // namespace sylva::ir::detail
