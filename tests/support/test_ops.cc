// The whole definition of a new elementwise op outside Sylva's sources:
// the op family entry (name, flags, shape inference, gradient, zero rule,
// category), the frontend function and the CPU kernel. Nothing else in
// Sylva names it: the plan fuses it by its flag, the runtime runs it, the
// profiler files it under its category.
#include "test_ops.h"

#include "sylva/backend/cpu_extension.h"
#include "sylva/core/error.h"
#include "sylva/ir/graph.h"

namespace sylva::test {
namespace {

using ir::OpKind;

ir::ValueType infer_cube(const ir::Node& n, std::span<const ir::ValueType> in) {
  SYLVA_CHECK(is_floating(in[0].dtype), "[", ir::op_name(n.op), "] x must be float32 or float64, got ", in[0].str());
  return in[0];
}

// d cube = 3 x² dy
void grad_cube(ir::GradContext& c) {
  if (!c.needs_grad(0)) return;
  const ir::NodeId x = c.input(0);
  ir::Attrs three;
  three.alpha = 3.0;
  c.add_grad(0, c.emit(OpKind::Scale, {c.emit(OpKind::Mul, {c.emit(OpKind::Mul, {x, x}), c.dy()})}, three));
}

ir::OpKind define_cube() {
  const OpKind k = ir::register_op({"cube", ir::OpFlag::elementwise | ir::OpFlag::fusible, 1, 1, infer_cube,
                                    grad_cube, ir::Zeros::input0, ir::OpCategory::elementwise});
  cpu::register_unary_kernel(k, {[](float x) { return x * x * x; }, [](double x) { return x * x * x; }});
  return k;
}

}  // namespace

ir::OpKind cube_op() {
  static const ir::OpKind k = define_cube();
  return k;
}

Symbol cube(Symbol x) { return apply_op(cube_op(), {x}); }

}  // namespace sylva::test
