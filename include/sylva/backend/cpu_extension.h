// CPU kernels for ops registered outside Sylva's op families
// (ir::register_op): an elementwise unary op gives its per-element
// function once, and the CPU backend runs it both as a kernel of its own
// and as a step of fused programs.
//
// @code
// ir::OpKind cube = ir::register_op({"cube", ir::OpFlag::elementwise | ir::OpFlag::fusible, 1, 1, infer, grad});
// cpu::register_unary_kernel(cube, {[](float x) { return x * x * x; }, [](double x) { return x * x * x; }});
// @endcode
#pragma once

#include "sylva/ir/op.h"

namespace sylva::cpu {

/// y = f(x) element by element, in float and in double.
struct UnaryElementKernel {
  float (*f32)(float) = nullptr;
  double (*f64)(double) = nullptr;
};

/// Registers the CPU kernel of `op`, a registered (not built-in) op with
/// one input and OpFlag::elementwise. sylva::Error otherwise, or when a
/// function is missing or `op` has a kernel already.
void register_unary_kernel(ir::OpKind op, UnaryElementKernel kernel);
/// The kernel registered for `op`, or nullptr.
const UnaryElementKernel* unary_kernel(ir::OpKind op);

}  // namespace sylva::cpu
