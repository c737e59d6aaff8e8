// Pass plan_task_local_rows (Optimisation::task_local_values, with
// skip_zero_work): a task-local value lives in one block that every task of
// the loop reuses, and a block the size of the largest task of the schedule
// is more than most need. The largest task of a batch of trees is usually
// its leaves, and at a leaf everything computed from the children -- the
// gathered messages, their products, the gradients sent back to them -- is
// known zero and stays unwritten (skipping zero work) or is not needed:
// SST's leaves are about half the rows of a minibatch, the next task a third
// of them or less. So each task-local value gets the rows of the largest
// task whose loop writes it, worked out from the zero and unneeded flags the
// loop uses, with the pulled rows and pushed gradients taken as nonzero
// (they are not known yet; more zeros only ever mean fewer writes). The
// runner's view() checks every task against it; a fused group that falls
// back to its members makes the runner give every task-local value the
// largest task's rows (its zero inputs then get rows of zeros).
#include <array>

#include "sylva/runtime/batch_plan.h"
#include "zero_work.h"

namespace sylva {

namespace {

// Whether the task loop writes node i of graph p in a task with these flags.
bool writes_in_task(const RunFacts& facts, const plan::GraphPlan& p, const GraphRunFacts& g, bool backward, size_t i,
                    std::span<const uint8_t> zero, std::span<const uint8_t> unneeded) {
  const ir::Node& n = p.graph->node(static_cast<ir::NodeId>(i));
  if (!p.runs(n.id) || p.phase[i] != plan::Phase::loop || p.folded[i] || (facts.row_windows && p.in_window[i]))
    return false;
  if (g.group[i] >= 0) return !output_unused(facts, g, backward, i, zero, unneeded);  // its group writes it
  if (backward && unneeded[i]) return false;
  if (zero[i] && skips_when_zero(n, p.home[i])) return !g.unwritten[i];
  return true;  // run (or, children in place, its rows are views elsewhere: counted anyway)
}

}  // namespace

BatchPlan plan_task_local_rows(BatchPlan p, const plan::VertexPlan& vp, const RunFacts& facts) {
  p.task_local_rows_f.assign(vp.forward.graph->size(), 0);
  p.task_local_rows_b.assign(vp.backward.graph->size(), 0);
  if (!facts.skip_zero_work) {  // every task writes: the largest task's rows
    for (size_t i = 0; i < p.task_local_rows_f.size(); ++i)
      if (facts.forward.task_local[i]) p.task_local_rows_f[i] = p.task_rows;
    for (size_t i = 0; i < p.task_local_rows_b.size(); ++i)
      if (facts.backward.task_local[i]) p.task_local_rows_b[i] = p.task_rows;
    return p;
  }
  struct Open {
    bool backward;
    size_t node;
  };
  std::vector<Open> open;  // task-local values still below the largest task
  for (size_t i = 0; i < p.task_local_rows_f.size(); ++i)
    if (facts.forward.task_local[i] && has_rows(facts, vp.forward, facts.forward, i)) open.push_back({false, i});
  for (size_t i = 0; i < p.task_local_rows_b.size(); ++i)
    if (facts.backward.task_local[i] && has_rows(facts, vp.backward, facts.backward, i)) open.push_back({true, i});
  // The flags depend on the task's absence only: worked out once per distinct one (and kept in the facts' memo).
  TaskZeros spare;
  for (size_t ti = 0; ti < p.tasks.size() && !open.empty(); ++ti) {
    const TaskZeros& f = detail::task_zeros(vp, p.absence[ti], false, false, facts.memo, spare);
    const int64_t bs = p.tasks[ti].bs;
    for (const Open& o : open) {
      int64_t& rows = o.backward ? p.task_local_rows_b[o.node] : p.task_local_rows_f[o.node];
      if (rows >= bs) continue;
      const bool writes = o.backward ? writes_in_task(facts, vp.backward, facts.backward, true, o.node, f.zero_b,
                                                      f.unneeded)
                                     : writes_in_task(facts, vp.forward, facts.forward, false, o.node, f.zero_f,
                                                      {});
      if (writes) rows = bs;
    }
  }
  return p;
}

}  // namespace sylva
