// Task-local values (Optimisation::task_local_values) sized by the
// largest task that writes them. A task-local value lives in one block that
// every task of the loop reuses; a block the size of the largest task of
// the schedule is more than most need. The largest task of a batch of trees
// is usually its leaves, and at a leaf everything computed from the
// children -- the gathered messages, their products, the gradients sent
// back to them -- is known zero and stays unwritten (skipping zero work) or
// is not needed: SST's leaves are about half the rows of a minibatch, the
// next task a third of them or less. So each task-local value gets the rows
// of the largest task whose loop writes it, worked out from the same
// zero and unneeded flags the loop uses, with the pulled rows and pushed
// gradients taken as non-zero (they are not known yet; more zeros only
// ever mean fewer writes). view() checks every task against it.
#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using plan::Phase;

bool VertexRunner::writes_in_task(const Values& v, size_t i, const Lane& flags) const {
  const plan::GraphPlan& p = *v.plan;
  const Node& n = p.graph->node(static_cast<ir::NodeId>(i));
  if (!p.runs(n.id) || p.phase[i] != Phase::loop || p.folded[i] || (windows_ && p.in_window[i])) return false;
  const int32_t group = v.group[i];
  if (group >= 0 && !v.group_failed[static_cast<size_t>(group)])  // an output its group writes unless unused
    return !output_unused(v, n.id, flags);
  if (v.backward && flags.unneeded[i]) return false;                            // skip_unneeded
  const bool zero = (v.backward ? flags.zero_b : flags.zero_f)[i] != 0;
  if (zero && skips_when_zero(n, p.home[i])) return !v.unwritten[i];
  return true;  // run (or, children in place, its rows are views elsewhere: counted anyway)
}

void VertexRunner::size_task_local() {
  const auto& tasks = schedule_->tasks;
  for (Values* v : {&fwd_, &bwd_}) {
    std::fill(v->local_rows.begin(), v->local_rows.end(), 0);
    // Without skipping zero work, or with a group whose members run one
    // by one (their zero inputs then get rows of zeros), every task writes.
    const bool all = !options_.on(Optimisation::skip_zero_work) ||
                     std::find(v->group_failed.begin(), v->group_failed.end(), 1) != v->group_failed.end();
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (all && task_local(*v, i)) v->local_rows[i] = batch_plan_->task_rows;
  }
  if (!options_.on(Optimisation::skip_zero_work)) return;
  std::vector<std::pair<Values*, size_t>> open;  // task-local values still below the largest task
  for (Values* v : {&fwd_, &bwd_})
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (task_local(*v, i) && materialized(*v, i) && v->local_rows[i] < batch_plan_->task_rows) open.emplace_back(v, i);
  for (size_t ti = 0; ti < tasks.size() && !open.empty(); ++ti) {
    task_flags(ti, /*backward=*/true, main_, /*assume_nonzero=*/true);
    const int64_t bs = tasks[ti].bs;
    for (auto& [v, i] : open)
      if (v->local_rows[i] < bs && writes_in_task(*v, i, main_)) v->local_rows[i] = bs;
  }
}

void VertexRunner::grow_task_local(Values& v) {
  for (size_t i = 0; i < v.arena.size(); ++i)
    if (task_local(v, i) && v.local_rows[i] < batch_plan_->task_rows) {
      if (materialized(v, i)) v.arena[i].reserve_rows(batch_plan_->task_rows, /*keep=*/true);
      v.local_rows[i] = batch_plan_->task_rows;
    }
}

}  // namespace sylva::detail
