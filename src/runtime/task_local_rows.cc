// Task-local values (Optimisation::task_local_values) as the runner keeps
// them: each in one block of the rows the batch plan gives it (pass
// plan_task_local_rows, batch_task_local.cc, says why), grown to the
// largest task's where a fused group falls back to its members.
#include <algorithm>

#include "vertex_runner.h"

namespace sylva::detail {

void VertexRunner::size_task_local() {
  for (Values* v : {&fwd_, &bwd_}) {
    const std::vector<int64_t>& planned = v->backward ? mb_.plan->task_local_rows_b : mb_.plan->task_local_rows_f;
    // Without the pass, or after a group of v fell back to running its
    // members (their zero inputs then get rows of zeros), every task writes.
    const bool all = planned.empty() ||
                     std::find(v->group_failed.begin(), v->group_failed.end(), 1) != v->group_failed.end();
    for (size_t i = 0; i < v->arena.size(); ++i)
      v->local_rows[i] = !task_local(*v, i) ? 0 : all ? mb_.plan->task_rows : planned[i];
  }
}

void VertexRunner::grow_task_local(Values& v) {
  for (size_t i = 0; i < v.arena.size(); ++i)
    if (task_local(v, i) && v.local_rows[i] < mb_.plan->task_rows) {
      if (materialized(v, i)) v.arena[i].reserve_rows(mb_.plan->task_rows, /*keep=*/true);
      v.local_rows[i] = mb_.plan->task_rows;
    }
}

}  // namespace sylva::detail
