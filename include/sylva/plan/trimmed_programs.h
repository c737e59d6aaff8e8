// The fused groups of a graph plan without their known-zero inputs and
// unneeded outputs (Optimisation::trim_fused_zeros): for each group and
// pattern of zero inputs / unused outputs a task presents, the program
// passes::without_zero_inputs derives from the group's, built once and
// kept. The runtime asks for one per task and runs it; deriving it is the
// plan's business, not the runner's.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sylva/ir/fused.h"
#include "sylva/plan/vertex_plan.h"

namespace sylva::plan {

class TrimmedPrograms {
 public:
  TrimmedPrograms() = default;
  explicit TrimmedPrograms(const GraphPlan& plan) : plan_(&plan), kept_(plan.fused.size()) {}

  /// Group `group`'s program for `pattern`: one byte per input of the
  /// group (1: zero in the task), then one per output (1: not written). The
  /// group's whole program when no byte is set.
  const ir::FusedProgram& get(size_t group, std::span<const uint8_t> pattern);
  /// Patterns kept for `group` (at most kMaxKept).
  size_t kept(size_t group) const { return kept_[group].size(); }
  /// Beyond this many patterns per group the last one kept makes room: an
  /// unused output has no rows to write into, so the whole program is no
  /// fallback.
  static constexpr size_t kMaxKept = 8;

 private:
  const GraphPlan* plan_ = nullptr;
  std::vector<std::vector<std::pair<std::vector<uint8_t>, ir::FusedProgram>>> kept_;
};

}  // namespace sylva::plan
