// Pass plan_absences (skipping zero work): per task of the minibatch, what
// is absent at every one of its rows -- a gather slot no row has a child
// in, no child at all under gather_reduce, pulled rows all looked up with
// id -1. The runner derives each task's zero and unneeded nodes from it.
#include <algorithm>

#include "sylva/runtime/batch_plan.h"

namespace sylva {

bool Absence::message_absent(const ir::Node& n) const {
  if (ir::op_def(n.op).zeros == ir::Zeros::absent_children) return no_children;
  return n.attrs.slot < 64 && (slots >> n.attrs.slot & 1u);
}

BatchPlan plan_absences(BatchPlan p, const Schedule& schedule, std::span<const int32_t> pull_ids) {
  p.absence.assign(p.tasks.size(), {});
  for (size_t ti = 0; ti < p.tasks.size(); ++ti) {
    const Task& t = p.tasks[ti];
    Absence& a = p.absence[ti];
    for (size_t slot = 0; slot < std::min<size_t>(p.child_rows.size(), 64); ++slot) {
      const int32_t* c = p.child_rows[slot].data() + t.offset;
      if (std::all_of(c, c + t.bs, [](int32_t r) { return r < 0; })) a.slots |= 1ull << slot;
    }
    a.no_children = !p.reduce_offsets.empty() &&
                    p.reduce_offsets[static_cast<size_t>(t.offset)] == p.reduce_offsets[static_cast<size_t>(t.offset + t.bs)];
    if (!pull_ids.empty()) {
      const int32_t* v = schedule.vertex_of_row.data() + t.offset;
      a.pull_grad_unused = std::all_of(v, v + t.bs, [&](int32_t x) { return pull_ids[static_cast<size_t>(x)] < 0; });
    }
  }
  return p;
}

}  // namespace sylva
