// plan::TrimmedPrograms: a fused group's program for a task's pattern of
// zero inputs and unneeded outputs is derived once by the plan and kept.
#include "sylva/plan/trimmed_programs.h"

#include <gtest/gtest.h>

#include <vector>

#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/passes/fusion.h"

namespace sylva {
namespace {

// A leaf's absent child makes one input of the tail's group zero: h = tanh(x·W + c·U) * sigmoid(x·W).
struct Cell {
  ParameterSet ps{DType::f64, 3};
  VertexFunction f{"cell", 4, DType::f64};
  Cell() {
    ps.add("W", {3, 4}, Init::uniform(-0.5, 0.5));
    ps.add("U", {4, 4}, Init::uniform(-0.5, 0.5));
    Symbol xw = matmul(f.pull(3), f.param(ps["W"]));
    Symbol cu = matmul(f.gather(0), f.param(ps["U"]));
    Symbol h = tanh(xw + cu) * sigmoid(xw);
    f.scatter(h);
    f.push(h);
  }
};

TEST(TrimmedPrograms, NoZeroIsTheWholeProgramAndAPatternIsDerivedOnceAndKept) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  ASSERT_FALSE(p->forward.fused.empty());
  const plan::FusedGroup& g = p->forward.fused[0];
  ASSERT_GE(g.inputs.size(), 2u);
  plan::TrimmedPrograms trimmed(p->forward);
  std::vector<uint8_t> pattern(g.inputs.size() + g.outputs.size(), 0);
  EXPECT_EQ(&trimmed.get(0, pattern), &g.program);
  EXPECT_EQ(trimmed.kept(0), 0u);

  for (size_t zero = 0; zero < g.inputs.size(); ++zero) {
    std::fill(pattern.begin(), pattern.end(), 0);
    pattern[zero] = 1;
    const ir::FusedProgram& a = trimmed.get(0, pattern);
    const ir::FusedProgram want =
        passes::without_zero_inputs(g.program, std::span<const uint8_t>(pattern).first(g.inputs.size()),
                                    std::span<const uint8_t>(pattern).subspan(g.inputs.size()));
    EXPECT_EQ(a.steps.size(), want.steps.size()) << "input " << zero;
    EXPECT_EQ(a.name, want.name) << "input " << zero;
    EXPECT_EQ(&trimmed.get(0, pattern), &a) << "derived again for input " << zero;
  }
  EXPECT_EQ(trimmed.kept(0), std::min(g.inputs.size(), plan::TrimmedPrograms::kMaxKept));
}

TEST(TrimmedPrograms, KeepsAtMostKMaxKeptPatternsPerGroup) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  const plan::FusedGroup& g = p->forward.fused[0];
  const size_t n = g.inputs.size() + g.outputs.size();
  plan::TrimmedPrograms trimmed(p->forward);
  // Every non-empty pattern over the inputs and outputs (as many as there are, up to 64).
  size_t asked = 0;
  for (uint64_t bits = 1; bits < (uint64_t{1} << std::min<size_t>(n, 6)); ++bits, ++asked) {
    std::vector<uint8_t> pattern(n, 0);
    for (size_t k = 0; k < std::min<size_t>(n, 6); ++k) pattern[k] = (bits >> k) & 1;
    trimmed.get(0, pattern);
  }
  ASSERT_GT(asked, plan::TrimmedPrograms::kMaxKept) << "the group is too small to test the bound";
  EXPECT_EQ(trimmed.kept(0), plan::TrimmedPrograms::kMaxKept);
}

}  // namespace
}  // namespace sylva
