#include "sylva/plan/trimmed_programs.h"

#include <algorithm>

#include "sylva/core/error.h"
#include "sylva/passes/fusion.h"

namespace sylva::plan {

const ir::FusedProgram& TrimmedPrograms::get(size_t group, std::span<const uint8_t> pattern) {
  SYLVA_ASSERT(plan_ && group < kept_.size(), "trimmed program of group ", group, " of ", kept_.size());
  const FusedGroup& g = plan_->fused[group];
  SYLVA_ASSERT(pattern.size() == g.inputs.size() + g.outputs.size(), "pattern of ", pattern.size(), " bytes for ",
               g.inputs.size(), " inputs and ", g.outputs.size(), " outputs");
  if (std::find(pattern.begin(), pattern.end(), 1) == pattern.end()) return g.program;
  auto& kept = kept_[group];
  for (const auto& [key, program] : kept)
    if (std::equal(key.begin(), key.end(), pattern.begin(), pattern.end())) return program;
  ir::FusedProgram trimmed =
      passes::without_zero_inputs(g.program, pattern.first(g.inputs.size()), pattern.subspan(g.inputs.size()));
  std::vector<uint8_t> key(pattern.begin(), pattern.end());
  if (kept.size() >= kMaxKept) {
    kept.back() = {std::move(key), std::move(trimmed)};
    return kept.back().second;
  }
  return kept.emplace_back(std::move(key), std::move(trimmed)).second;
}

}  // namespace sylva::plan
