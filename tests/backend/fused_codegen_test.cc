// CUDA source generation for fused groups (no GPU, no CUDA needed): what the
// generated kernel contains, and every way a program can be refused. That
// the source compiles is checked by tests/cuda/nvrtc_test.cc, that it
// computes what the CPU does by tests/cuda/cuda_backend_test.cc.
#include "../../src/backend/cuda/fused_codegen.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace sylva::cuda {
namespace {

using ir::OpKind;

// An LSTM-like group: sigmoid of a slice, tanh of another, their product,
// then a scaled copy and a concat as outputs.
FusedProgram lstm_like() {
  FusedProgram p;
  p.name = "slice+sigmoid+tanh+mul+scale+concat";
  p.steps = {fused_step(OpKind::Slice, {-1}, 4, -1, 0), fused_step(OpKind::Slice, {-1}, 4, -1, 4),
             fused_step(OpKind::Sigmoid, {0}, 4), fused_step(OpKind::Tanh, {1}, 4),
             fused_step(OpKind::Mul, {2, 3}, 4, 0)};
  FusedStep sc = fused_step(OpKind::Scale, {4}, 4);
  sc.alpha = 0.25;
  p.steps.push_back(sc);
  p.steps.push_back(fused_step(OpKind::Concat, {5, -2}, 7, 1));
  return p;
}

TEST(FusedCodegen, TheKernelSpellsOutEveryStep) {
  const std::vector<int64_t> cols{8, 3};
  const FusedKernel k = fused_kernel_source(lstm_like(), DType::f32, cols);
  EXPECT_EQ(k.inputs, 2);
  EXPECT_EQ(k.outputs, 2);
  EXPECT_EQ(k.scratch_per_warp, 4 + 4 + 4);  // sigmoid, tanh, scale; slices are pointers, outputs go to memory
  EXPECT_EQ(k.source.find('@'), std::string::npos) << "a placeholder was left in the source";
  EXPECT_CONTAINS(k.source, "typedef float T;");
  EXPECT_CONTAINS(k.source, "extern \"C\" __global__ void __launch_bounds__(4 * 32) " + k.kernel + "(");
  EXPECT_CONTAINS(k.source, "const T* v1 = x0 + 4;");  // a slice is a pointer into its input's row
  EXPECT_CONTAINS(k.source, "v2[c] = sylva_sigmoid(v0[c])");
  EXPECT_CONTAINS(k.source, "T* const v4 = args.out[0] + r * 4;");
  EXPECT_CONTAINS(k.source, "v5[c] = v4[c] * T(0.25)");
  EXPECT_CONTAINS(k.source, "for (int c = lane; c < 3; c += 32) v6[4 + c] = x1[c]");  // concat's second part
  EXPECT_CONTAINS(k.source, "// slice+sigmoid+tanh+mul+scale+concat");
  // Deterministic, and keyed by shape: the same program gives the same
  // source; other widths give another kernel.
  EXPECT_EQ(fused_kernel_source(lstm_like(), DType::f32, cols).source, k.source);
  const std::vector<int64_t> wider{8, 5};
  FusedProgram p = lstm_like();
  p.steps.back().cols = 9;
  EXPECT_NE(fused_kernel_source(p, DType::f32, wider).kernel, k.kernel);
  EXPECT_CONTAINS(fused_kernel_source(lstm_like(), DType::f64, cols).source, "typedef double T;");
}

TEST(FusedCodegen, AssembleAddsItsPartsOneAfterAnother) {
  FusedProgram p;
  p.name = "assemble";
  FusedStep s = fused_step(OpKind::Assemble, {-1, -2}, 6, 0);
  s.offsets = {0, 2};  // overlapping columns 2..3
  p.steps = {s};
  const std::vector<int64_t> cols{4, 4};
  const FusedKernel k = fused_kernel_source(p, DType::f64, cols);
  const size_t zero = k.source.find("v0[c] = T(0)"), first = k.source.find("v0[0 + c] += x0[c]"),
               second = k.source.find("v0[2 + c] += x1[c]");
  ASSERT_NE(zero, std::string::npos);
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(zero, first);
  EXPECT_LT(first, second);
  EXPECT_NE(k.source.find("__syncwarp();", first), std::string::npos);
  EXPECT_LT(k.source.find("__syncwarp();", first), second);  // the parts may overlap: a barrier between them
}

TEST(FusedCodegen, ProgramsThatCannotBeGeneratedAreErrors) {
  const std::vector<int64_t> one{4};
  const auto error = [&](FusedProgram p, std::span<const int64_t> cols = {}) {
    return test::error_of([&] { fused_kernel_source(p, DType::f32, cols); });
  };
  FusedProgram p;
  p.name = "g";
  p.steps = {fused_step(OpKind::MatMul, {-1, -1}, 4, 0)};
  EXPECT_CONTAINS(error(p, one), "step 0 (matmul): op is not fusible");
  p.steps = {fused_step(OpKind::Tanh, {1}, 4, 0), fused_step(OpKind::Tanh, {-1}, 4)};
  EXPECT_CONTAINS(error(p, one), "reads step 1, which does not come before it");
  p.steps = {fused_step(OpKind::Tanh, {-2}, 4, 0)};
  EXPECT_CONTAINS(error(p, one), "reads input 1 of 1");
  p.steps = {fused_step(OpKind::Add, {-1}, 4, 0)};
  EXPECT_CONTAINS(error(p, one), "1 arguments, expected 2");
  p.steps = {fused_step(OpKind::Concat, {-1, -1}, 9, 0)};
  EXPECT_CONTAINS(error(p, one), "arguments have 8 columns in all, the step 9");
  p.steps = {fused_step(OpKind::Tanh, {-1}, 5, 0)};
  EXPECT_CONTAINS(error(p, one), "argument 0 has 4 columns, the step 5");
  p.steps = {fused_step(OpKind::Tanh, {-1}, 4)};
  EXPECT_CONTAINS(error(p, one), "no step is an output");
  FusedStep asm_step = fused_step(OpKind::Assemble, {-1}, 4, 0);
  asm_step.offsets = {2};
  p.steps = {asm_step};
  EXPECT_CONTAINS(error(p, one), "argument 0 at column 2 overruns 4 columns");
  p.steps = {fused_step(OpKind::Tanh, {-1}, 4, 0)};
  EXPECT_CONTAINS(test::error_of([&] { fused_kernel_source(p, DType::i32, one); }), "f32 or f64");
  // Per-row scratch beyond shared memory: refused (the backend then runs the group unfused).
  const std::vector<int64_t> wide{20000};
  p.steps = {fused_step(OpKind::Tanh, {-1}, 20000), fused_step(OpKind::Exp, {0}, 20000, 0)};
  EXPECT_CONTAINS(error(p, wide), "80000 bytes of scratch per row, more than the 49152 bytes");
  // Less scratch fits with fewer warps per block.
  const std::vector<int64_t> mid{4000};
  p.steps = {fused_step(OpKind::Tanh, {-1}, 4000), fused_step(OpKind::Exp, {0}, 4000, 0)};
  const FusedKernel two = fused_kernel_source(p, DType::f32, mid);
  EXPECT_EQ(two.warps, 2);
  EXPECT_EQ(two.shared_bytes, 2 * 4000 * 4);
  EXPECT_CONTAINS(two.source, "extern __shared__");  // sized at launch, not a static array
  // An sm_90 block may opt in to 227 KiB: the wide group fits, two warps to a block.
  p.steps = {fused_step(OpKind::Tanh, {-1}, 20000), fused_step(OpKind::Exp, {0}, 20000, 0)};
  const FusedKernel big = fused_kernel_source(p, DType::f32, wide, 227 * 1024);
  EXPECT_EQ(big.warps, 2);
  EXPECT_EQ(big.shared_bytes, 2 * 80000);
}

}  // namespace
}  // namespace sylva::cuda
