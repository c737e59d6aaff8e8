// A test-only op family: ops defined outside Sylva's src/ir, registered at
// run time (ir::register_op) with a CPU kernel (cpu::register_unary_kernel).
// What adding an elementwise op takes, in one file: tests/support/test_ops.cc.
#pragma once

#include "sylva/frontend/symbol.h"
#include "sylva/ir/op.h"

namespace sylva::test {

/// cube(x) = x³, elementwise, fusible; its kind (registered on first use).
ir::OpKind cube_op();
/// The frontend function of cube.
Symbol cube(Symbol x);

}  // namespace sylva::test
