// Children in place (Optimisation::children_in_place), as the runner reads
// it: where the batch plan has the children blocks (batch_children_blocks.cc
// decides), F's concat is a view of the children's message rows and ∂F's
// gradient of it a view of their message-gradient rows.
#include <algorithm>

#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

// The children block of the rows of t (a task, or a run of tasks outside
// the loop) for F's concat or ∂F's gradient of it; no data where the rows
// have no children (their own arena rows then).
MatView VertexRunner::children_block(bool backward, const Task& t) {
  const auto first = static_cast<size_t>(t.offset), end = static_cast<size_t>(t.offset + t.bs);
  const int32_t in_place = mb_.plan->children.blocked[end] - mb_.plan->children.blocked[first];
  if (in_place == 0) return {};
  SYLVA_ASSERT(in_place == t.bs, "a run of tasks with children in place and without (rows ", t.offset, ", +", t.bs,
               ")");
  const int64_t S = plan_->gather_slots;
  MatView rows = backward ? boundary_.message_grads() : boundary_.messages();
  rows = rows.block(mb_.plan->children.first_child[first], S * t.bs);
  return {rows.data, t.bs, S * rows.cols, rows.dtype};
}

bool VertexRunner::in_children_block(const Values& v, const Node& n, const Task& t) {
  if (!mb_.plan->children.in_place) return false;
  const bool mine = v.backward ? n.op == OpKind::GatherGradOut && v.plan->window[static_cast<size_t>(n.id)]
                               : n.id == mb_.plan->children.nodes.concat;
  return mine && children_block(v.backward, t).data;
}

}  // namespace sylva::detail
