// A stage cost model for tests of IOS plans on the CNN runner: concurrent
// stages cost their longest group, so plans run independent operators side
// by side; merged stages cost little, so plans merge what `rule` allows.
#pragma once

#include <algorithm>
#include <bit>

#include "sylva/graph/cnn.h"
#include "sylva/sched/ios.h"

namespace sylva::test {

struct SideBySide : ios::StageCostModel {
  double latency(const ios::OpDag&, const ios::Stage& st) override {
    if (st.kind == ios::Stage::Kind::merged) return 0.5;
    int longest = 0;
    for (ios::OpSet g : st.groups) longest = std::max(longest, std::popcount(g));
    return longest;
  }
  bool mergeable(const ios::OpDag& dag, ios::OpSet ops) override { return rule && rule->mergeable(dag, ops); }
  cnn::ProfilingCost* rule = nullptr;  // what the runner can merge; null: nothing
};

/// An IOS plan of `part` under SideBySide (r = 3, s = 8): with `merge`,
/// merging what the runner can merge (IOS-Both), else concurrent stages
/// only (IOS-Parallel). The runner must hold the part's inputs.
inline ios::StagePlan side_by_side_plan(cnn::CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part,
                                        bool merge) {
  cnn::ProfilingCost rule(runner, block, part, 1);
  SideBySide cost;
  if (merge) cost.rule = &rule;
  return ios::schedule(part.dag, cost, {merge ? ios::Variant::both : ios::Variant::parallel, 3, 8});
}

}  // namespace sylva::test
