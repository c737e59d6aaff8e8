#include "op_defs.h"

namespace sylva::ir {
namespace {

const detail::Table& table() {
  static const detail::Table t = [] {
    detail::Table tab{};
    detail::define_math_ops(tab);
    detail::define_structure_ops(tab);
    detail::define_boundary_ops(tab);
    for (size_t i = 0; i < static_cast<size_t>(OpKind::Count_); ++i)
      SYLVA_ASSERT(tab[i].infer != nullptr, "op kind ", i, " has no definition");
    return tab;
  }();
  return t;
}

}  // namespace

const OpDef& op_def(OpKind op) {
  SYLVA_ASSERT(op < OpKind::Count_);
  return table()[static_cast<size_t>(op)];
}

std::string_view op_name(OpKind op) { return op_def(op).name; }

std::vector<OpKind> all_ops() {
  std::vector<OpKind> ops;
  for (size_t i = 0; i < static_cast<size_t>(OpKind::Count_); ++i) ops.push_back(static_cast<OpKind>(i));
  return ops;
}

bool zero_from_inputs(const Node& n, std::span<const uint8_t> zero) {
  const auto z = [&](size_t k) { return k < n.inputs.size() && zero[static_cast<size_t>(n.inputs[k])] != 0; };
  switch (op_def(n.op).zeros) {
    case Zeros::never: return false;
    case Zeros::any: return z(0) || z(1);
    case Zeros::all:
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!z(k)) return false;
      return !n.inputs.empty();
    case Zeros::input0: return z(0);
    case Zeros::input1: return z(1);
    case Zeros::absent_message: case Zeros::pulled_rows: case Zeros::forward_value: return false;  // runtime facts
  }
  return false;
}

std::string ValueType::str() const {
  std::string s(dtype_name(dtype));
  if (rowed) return s + "[*, " + std::to_string(shape.cols()) + "]";
  return s + shape.str();
}

namespace detail {

void require_float(const Node& n, const ValueType& v, const char* what) {
  SYLVA_CHECK(is_floating(v.dtype), "[", op_name(n.op), "] ", what, " must be float32 or float64, got ",
              v.str());
}

ValueType broadcast_type(const Node& n, const ValueType& a, const ValueType& b) {
  require_float(n, a, "first operand");
  require_float(n, b, "second operand");
  SYLVA_CHECK(a.dtype == b.dtype, "[", op_name(n.op), "] operand dtypes differ: ", a.str(), " vs ", b.str());
  SYLVA_CHECK(a.cols() == b.cols(), "[", op_name(n.op), "] operand widths differ: ", a.str(), " vs ", b.str(),
              " (a rank-1 operand of width c broadcasts over rows of width c)");
  auto is_vector = [](const ValueType& v) { return !v.rowed && v.shape.rank() <= 1; };
  if (a.rowed && b.rowed) return a;
  if (a.rowed || b.rowed) {
    const ValueType& fixed = a.rowed ? b : a;
    SYLVA_CHECK(is_vector(fixed), "[", op_name(n.op), "] cannot combine rowed ", (a.rowed ? a : b).str(),
                " with fixed ", fixed.str(), ": only a rank-1 vector broadcasts over rows");
    return a.rowed ? a : b;
  }
  if (a.shape.rows() == b.shape.rows()) return a.shape.rank() >= b.shape.rank() ? a : b;
  if (is_vector(a)) return b;
  if (is_vector(b)) return a;
  SYLVA_THROW("[", op_name(n.op), "] shapes differ: ", a.str(), " vs ", b.str());
}

NodeId reduce_to(GradContext& ctx, NodeId grad, const ValueType& operand) {
  const ValueType g = ctx.type_of(grad);
  bool broadcast = (g.rowed && !operand.rowed) || (!g.rowed && !operand.rowed && g.shape.rows() != operand.shape.rows());
  return broadcast ? ctx.emit(OpKind::SumRows, {grad}) : grad;
}

}  // namespace detail
}  // namespace sylva::ir
