// The GEMMs of Sylva's training steps, recorded from the executor's
// observer (OpEvent) and replayed through the backend's own MatMul kernel
// on operands allocated once: how long a step's GEMMs take with nothing
// else around them (the `gemm-floor` strategy of bench_suite).
#pragma once

#include <compare>
#include <optional>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::bench {

/// One GEMM as a MatMul kernel ran it: out (=|+=) op(A)·op(B), A
/// [a_rows, a_cols], B [b_rows, b_cols], out [out_rows, out_cols].
struct RecordedGemm {
  int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, out_rows = 0, out_cols = 0;
  bool trans_a = false, trans_b = false;
  bool accumulate = false;  // a parameter gradient folded into its ParamGradOut (grad += A·B)
  int64_t flops() const;
  auto operator<=>(const RecordedGemm&) const = default;
};

/// The GEMM an event ran: a MatMul, or one folded into a ParamGradOut;
/// nullopt for any other op and for a GEMM without work. The operands'
/// rows come from the event's flop count (OpEvent::flops counts every
/// rowed operand with the same rows); sylva::Error when they cannot be
/// reconstructed consistently.
std::optional<RecordedGemm> recorded_gemm(const OpEvent& e);

/// Runs recorded GEMMs through a backend on operand buffers (host memory)
/// that grow to the largest GEMM seen and are then reused: the operands
/// are the same memory for every call, so the replay is if anything
/// kinder to the caches than the step it was recorded from.
class GemmReplay {
 public:
  explicit GemmReplay(Backend& backend);
  /// Grows the buffers to fit `gemms` too (filled with small values
  /// when they grow); call it for every list before run(). Under
  /// Precision::bf16 the operands are bfloat16 already (as the parameters'
  /// copies are in the step), so the replay times the bf16 kernel alone.
  void prepare(const std::vector<RecordedGemm>& gemms, DType dtype, Precision precision = Precision::fp32);
  void run(const std::vector<RecordedGemm>& gemms);

 private:
  Backend& backend_;
  DType dtype_ = DType::f32, operands_ = DType::f32;
  Buffer a_, b_, c_;
  ExecContext ctx_{};
  ir::Node matmul_[2][2];  // MatMul nodes with each pair of transposes (all a kernel reads of the node)
};

}  // namespace sylva::bench
