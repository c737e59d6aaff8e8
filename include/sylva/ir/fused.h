// A group of row-local ops run as one pass over the rows (fusion, see
// Optimisation::fusion): the plan builds it (sylva/plan/vertex_plan.h),
// a backend runs it (Backend::run_fused).
//
// @code
// ir::FusedProgram p;  // y = tanh(a + b)
// p.steps.push_back(ir::fused_step(ir::OpKind::Add, {-1, -2}, 8));
// p.steps.push_back(ir::fused_step(ir::OpKind::Tanh, {0}, 8, /*output=*/0));
// @endcode
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sylva/ir/op.h"

namespace sylva::ir {

/// Step k of a fused program reads external inputs and earlier steps and
/// computes one value of `cols` columns per row; steps with `output >= 0`
/// are written to out[output], the others live only in per-row scratch.
/// Ops: those flagged OpFlag::fusible (Add, Sub, Mul -- a one-row operand
/// broadcasts --, Tanh, Sigmoid, Relu, Exp, Log, Scale, TanhGrad,
/// SigmoidGrad, ReluGrad, LogGrad, Slice, Concat, Assemble), with the
/// semantics of their kernels.
struct FusedStep {
  OpKind op = OpKind::Add;
  std::vector<int32_t> args;     // >= 0: an earlier step; < 0: external input -1 - arg
  int64_t cols = 0;
  int64_t begin = 0;             // Slice: first column
  std::vector<int64_t> offsets;  // Assemble: the column of each arg
  double alpha = 0.0;            // Scale
  int32_t output = -1;
};
/// A step of `op` over `args` giving `cols` columns; `output` >= 0 writes it
/// to out[output]; `begin` is a Slice's first column.
inline FusedStep fused_step(OpKind op, std::vector<int32_t> args, int64_t cols, int32_t output = -1,
                            int64_t begin = 0) {
  FusedStep s;
  s.op = op;
  s.args = std::move(args);
  s.cols = cols;
  s.begin = begin;
  s.output = output;
  return s;
}
struct FusedProgram {
  std::vector<FusedStep> steps;
  std::string name;  // the ops, e.g. "sigmoid+tanh+mul"
};

}  // namespace sylva::ir
