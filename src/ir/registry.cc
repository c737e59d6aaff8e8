#include "op_defs.h"

#include <atomic>
#include <mutex>

namespace sylva::ir {
namespace {

// The built-in ops' definitions, then the registered ones (register_op).
// Entries below `count` never change once written, so readers take no lock.
struct Registry {
  Registry() {
    detail::define_math_ops(table);
    detail::define_structure_ops(table);
    detail::define_boundary_ops(table);
    for (size_t i = 0; i < static_cast<size_t>(OpKind::Count_); ++i)
      SYLVA_ASSERT(table[i].infer != nullptr, "op kind ", i, " has no definition");
    count = static_cast<size_t>(OpKind::Count_);
  }
  detail::Table table{};
  std::atomic<size_t> count{0};
  std::mutex mu;  // register_op
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const OpDef& op_def(OpKind op) {
  Registry& r = registry();
  SYLVA_ASSERT(static_cast<size_t>(op) < r.count.load(std::memory_order_acquire), "op kind ", static_cast<int>(op),
               " is neither built in nor registered");
  return r.table[static_cast<size_t>(op)];
}

std::string_view op_name(OpKind op) { return op_def(op).name; }

std::vector<OpKind> all_ops() {
  std::vector<OpKind> ops;
  for (size_t i = 0; i < registry().count.load(std::memory_order_acquire); ++i) ops.push_back(static_cast<OpKind>(i));
  return ops;
}

OpKind register_op(const OpDef& def) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  SYLVA_CHECK(def.infer != nullptr, "[ir] op '", def.name, "' has no shape inference");
  SYLVA_CHECK(!def.name.empty(), "[ir] an op needs a name");
  const size_t n = r.count.load();
  for (size_t i = 0; i < n; ++i)
    SYLVA_CHECK(r.table[i].name != def.name, "[ir] an op named '", def.name, "' exists already");
  SYLVA_CHECK(n < kMaxOpKinds, "[ir] no room for op '", def.name, "': ", kMaxOpKinds, " op kinds at most");
  r.table[n] = def;
  r.count.store(n + 1, std::memory_order_release);
  return static_cast<OpKind>(n);
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
    case Zeros::absent_message: case Zeros::absent_children: case Zeros::pulled_rows: case Zeros::forward_value: case Zeros::pushed_grad:
      return false;  // runtime facts
  }
  return false;
}

int64_t flops(const Graph& g, const Node& n, int64_t rows) {
  const FlopFn f = op_def(n.op).flops;
  return f == nullptr ? 0 : f(n, g, rows);
}

int64_t flops_per_element(const Node& n, const Graph&, int64_t rows) {
  return (n.type.rowed ? rows : n.type.fixed_rows()) * n.type.cols();
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
