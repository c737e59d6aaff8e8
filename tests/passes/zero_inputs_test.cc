// Fused programs without their zero inputs (passes::without_zero_inputs):
// the steps a zero input makes trivial are left out, outputs that became
// another value are copies of it, and on inputs that really are zero the
// trimmed program writes the same values as the whole one -- on the
// programs of Tree-FC and of random ones.
#include <gtest/gtest.h>

#include <random>

#include "sylva/backend/backend.h"
#include "sylva/passes/fusion.h"

namespace sylva {
namespace {

using ir::FusedProgram;
using ir::fused_step;
using ir::OpKind;

std::vector<OpKind> ops_of(const FusedProgram& p) {
  std::vector<OpKind> ops;
  for (const ir::FusedStep& s : p.steps) ops.push_back(s.op);
  return ops;
}

// Tree-FC's forward group, relu(x·W-part + word + b): inputs -1 = the
// product, -2 = the pulled word row, -3 = b.
FusedProgram tree_fc_forward() {
  FusedProgram p;
  p.name = "add+add+relu";
  p.steps.push_back(fused_step(OpKind::Add, {-1, -2}, 4));
  p.steps.push_back(fused_step(OpKind::Add, {0, -3}, 4));
  p.steps.push_back(fused_step(OpKind::Relu, {1}, 4, 0));
  return p;
}

TEST(WithoutZeroInputs, AnInnerVertexAddsNoZeroWordRow) {
  const FusedProgram p = tree_fc_forward();
  const uint8_t zero_word[] = {0, 1, 0};
  const FusedProgram t = passes::without_zero_inputs(p, zero_word);
  EXPECT_EQ(ops_of(t), (std::vector<OpKind>{OpKind::Add, OpKind::Relu}));
  EXPECT_EQ(t.steps[0].args, (std::vector<int32_t>{-1, -3}));
  EXPECT_EQ(t.steps[1].args, (std::vector<int32_t>{0}));
  EXPECT_EQ(t.steps[1].output, 0);
  EXPECT_EQ(t.name, p.name);
  // A leaf: its product is zero (no children), the word is not.
  const uint8_t zero_product[] = {1, 0, 0};
  EXPECT_EQ(passes::without_zero_inputs(p, zero_product).steps[0].args, (std::vector<int32_t>{-2, -3}));
}

TEST(WithoutZeroInputs, NoZeroInputLeavesTheProgramAsItIs) {
  const FusedProgram p = tree_fc_forward();
  const uint8_t none[] = {0, 0, 0};
  EXPECT_EQ(ops_of(passes::without_zero_inputs(p, none)), ops_of(p));
}

TEST(WithoutZeroInputs, AnOutputThatBecameItsOtherTermIsACopyOfIt) {
  // Tree-FC's backward group: dh = message gradient + pushed gradient (written out), relu_grad(h, dh).
  FusedProgram p;
  p.steps.push_back(fused_step(OpKind::Add, {-1, -2}, 4, 0));
  p.steps.push_back(fused_step(OpKind::ReluGrad, {-3, 0}, 4, 1));
  const uint8_t zero_pushed[] = {0, 1, 0};
  const FusedProgram t = passes::without_zero_inputs(p, zero_pushed);
  EXPECT_EQ(ops_of(t), (std::vector<OpKind>{OpKind::Slice, OpKind::ReluGrad}));
  EXPECT_EQ(t.steps[0].args, (std::vector<int32_t>{-1}));
  EXPECT_EQ(t.steps[0].begin, 0);
  EXPECT_EQ(t.steps[0].output, 0);
  EXPECT_EQ(t.steps[1].args, (std::vector<int32_t>{-3, -1}));  // reads the message gradient itself
}

TEST(WithoutZeroInputs, AssembleDropsItsZeroPiecesAndAProductOfZeroIsNotComputed) {
  // c = i·u + f·c_child (a Tree-LSTM leaf: c_child zero), assembled with i and f.
  FusedProgram p;
  p.steps.push_back(fused_step(OpKind::Mul, {-1, -2}, 2));         // 0: i·u
  p.steps.push_back(fused_step(OpKind::Mul, {-3, -4}, 2));         // 1: f·c_child
  p.steps.push_back(fused_step(OpKind::Add, {0, 1}, 2, 0));        // 2: c, out 0
  p.steps.push_back(fused_step(OpKind::Assemble, {-1, 1}, 4, 1));  // 3: [i; f·c_child], out 1
  p.steps[3].offsets = {0, 2};
  const uint8_t zero_child[] = {0, 0, 0, 1};
  const FusedProgram t = passes::without_zero_inputs(p, zero_child);
  EXPECT_EQ(ops_of(t), (std::vector<OpKind>{OpKind::Mul, OpKind::Slice, OpKind::Assemble}));
  EXPECT_EQ(t.steps[1].args, (std::vector<int32_t>{0}));
  EXPECT_EQ(t.steps[2].args, (std::vector<int32_t>{-1}));
  EXPECT_EQ(t.steps[2].offsets, (std::vector<int64_t>{0}));
  EXPECT_EQ(t.steps[2].cols, 4);
}

// Random programs of W-wide values (concats and assembles 2W wide, sliced
// back), some inputs one broadcast row: the whole and the trimmed program
// on the same inputs, the zero ones as the runner passes them (one row of
// zeros), write equal values (== : the sign of a zero may differ), and the
// trimmed one writes nothing into the outputs it was told are unused.
TEST(WithoutZeroInputs, RandomProgramsWriteTheSameValues) {
  constexpr int64_t R = 5, W = 3;
  constexpr int kInputs = 5;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-2, 2);
  const OpKind unary[] = {OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Scale};
  const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::TanhGrad, OpKind::SigmoidGrad,
                           OpKind::ReluGrad};
  int trimmed_steps = 0, whole_steps = 0;
  for (int trial = 0; trial < 300; ++trial) {
    FusedProgram p;
    const auto pick = [&]() -> int32_t {  // a W-wide value: an input or an earlier W-wide step
      std::vector<int32_t> refs;
      for (int32_t k = 1; k <= kInputs; ++k) refs.push_back(-k);
      for (size_t s = 0; s < p.steps.size(); ++s)
        if (p.steps[s].cols == W) refs.push_back(static_cast<int32_t>(s));
      return refs[rng() % refs.size()];
    };
    const int steps = 2 + static_cast<int>(rng() % 7);
    for (int s = 0; s < steps; ++s) {
      switch (rng() % 5) {
        case 0: {
          p.steps.push_back(fused_step(unary[rng() % 4], {pick()}, W));
          p.steps.back().alpha = 0.5;
          break;
        }
        case 1: case 2: p.steps.push_back(fused_step(binary[rng() % 6], {pick(), pick()}, W)); break;
        default: {  // a 2W concat or assemble, then a W slice of it
          const bool assemble = rng() % 2 != 0;
          p.steps.push_back(fused_step(assemble ? OpKind::Assemble : OpKind::Concat, {pick(), pick()}, 2 * W));
          if (assemble) p.steps.back().offsets = {0, W};
          p.steps.push_back(fused_step(OpKind::Slice, {static_cast<int32_t>(p.steps.size() - 1)}, W, -1,
                                       static_cast<int64_t>(rng() % 2) * W));
        }
      }
    }
    int32_t outputs = 0;
    for (size_t s = 0; s < p.steps.size(); ++s)
      if (s + 1 == p.steps.size() || rng() % 3 == 0) p.steps[s].output = outputs++;
    std::vector<uint8_t> zero(kInputs);
    std::vector<std::vector<double>> data(kInputs);
    std::vector<MatView> in;
    const std::vector<double> zero_row(2 * W, 0.0);
    for (int k = 0; k < kInputs; ++k) {
      zero[static_cast<size_t>(k)] = rng() % 3 == 0;
      const int64_t rows = rng() % 4 == 0 ? 1 : R;
      data[static_cast<size_t>(k)].resize(static_cast<size_t>(rows * W));
      for (double& e : data[static_cast<size_t>(k)]) e = u(rng);
      in.push_back(zero[static_cast<size_t>(k)] ? MatView{const_cast<double*>(zero_row.data()), 1, W, DType::f64}
                                                : MatView{data[static_cast<size_t>(k)].data(), rows, W, DType::f64});
    }
    std::vector<uint8_t> unused(static_cast<size_t>(outputs));
    for (uint8_t& f : unused) f = rng() % 4 == 0;
    const FusedProgram t = passes::without_zero_inputs(p, zero, unused);
    whole_steps += static_cast<int>(p.steps.size());
    trimmed_steps += static_cast<int>(t.steps.size());
    std::vector<std::vector<double>> a(static_cast<size_t>(outputs)), b(static_cast<size_t>(outputs));
    std::vector<MatView> out_a, out_b;
    for (const ir::FusedStep& s : p.steps)
      if (s.output >= 0) {
        a[static_cast<size_t>(s.output)].assign(static_cast<size_t>(R * s.cols), 7.0);
        b[static_cast<size_t>(s.output)].assign(static_cast<size_t>(R * s.cols), -7.0);
      }
    for (int32_t o = 0; o < outputs; ++o) {
      const auto cols = static_cast<int64_t>(a[static_cast<size_t>(o)].size()) / R;
      out_a.push_back({a[static_cast<size_t>(o)].data(), R, cols, DType::f64});
      out_b.push_back({b[static_cast<size_t>(o)].data(), R, cols, DType::f64});
    }
    Backend& cpu = backend_for(Device::cpu());
    ASSERT_TRUE(cpu.run_fused(p, in, out_a, R));
    ASSERT_TRUE(cpu.run_fused(t, in, out_b, R));
    for (int32_t o = 0; o < outputs; ++o)
      for (size_t e = 0; e < a[static_cast<size_t>(o)].size(); ++e)
        ASSERT_EQ(unused[static_cast<size_t>(o)] ? -7.0 : a[static_cast<size_t>(o)][e], b[static_cast<size_t>(o)][e])
            << "trial " << trial << ", output " << o << (unused[static_cast<size_t>(o)] ? " (unused)" : "")
            << ", element " << e;
  }
  EXPECT_LT(trimmed_steps, whole_steps) << "the zero inputs and unused outputs should leave some steps out";
}

}  // namespace
}  // namespace sylva
