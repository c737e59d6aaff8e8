// Children in place (Optimisation::children_in_place): where every
// parent's children sit in consecutive rows in slot order, and parents in
// row order have consecutive children blocks (complete trees in BFS order:
// Cavs's contiguous blocks), F's concat of the gathered messages is a view
// of the children's message rows -- [bs, S·h] is the same memory as the
// [S·bs, h] rows of the messages -- and ∂F writes the gradient of that
// concat straight into the children's message-gradient rows. Neither the
// gathers nor the gather gradients copy a row.
#include <algorithm>

#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

// F: a row-window concat of gather(0) .. gather(S-1) in slot order, each a
// message wide. ∂F: one value whose slices [k·h, (k+1)·h) are the row-window
// gather gradients of slot k, for every slot once.
void VertexRunner::find_children_blocks() {
  const int64_t S = plan_->gather_slots;
  if (!windows_ || !options_.on(Optimisation::children_in_place) || plan_->gathers_all || S < 1 ||
      plan_->scatter_source == ir::kNoNode)
    return;
  const plan::GraphPlan& f = plan_->forward;
  const int64_t h = f.graph->node(plan_->scatter_source).type.cols();
  for (const Node& n : f.graph->nodes()) {
    if (!f.window[static_cast<size_t>(n.id)] || n.op != OpKind::Concat || static_cast<int64_t>(n.inputs.size()) != S)
      continue;
    bool ok = true;
    for (int64_t k = 0; k < S; ++k) {
      const Node& g = f.graph->node(n.inputs[static_cast<size_t>(k)]);
      ok = ok && g.op == OpKind::Gather && g.attrs.slot == k && g.type.cols() == h;
    }
    if (ok) {
      concat_block_ = n.id;
      break;
    }
  }
  const plan::GraphPlan& b = plan_->backward;
  NodeId source = ir::kNoNode;
  std::vector<int> seen(static_cast<size_t>(S), 0);
  for (const Node& n : b.graph->nodes()) {
    if (n.op != OpKind::GatherGradOut || !b.runs(n.id)) continue;
    const Node& slice = b.graph->node(n.inputs[0]);
    const int64_t k = n.attrs.slot;
    if (!b.window[static_cast<size_t>(n.id)] || slice.op != OpKind::Slice || k < 0 || k >= S ||
        slice.attrs.begin != k * h || slice.type.cols() != h || (source != ir::kNoNode && slice.inputs[0] != source))
      return;
    source = slice.inputs[0];
    ++seen[static_cast<size_t>(k)];
  }
  for (int c : seen)
    if (c != 1) return;
  if (source == ir::kNoNode || b.home[static_cast<size_t>(source)] != plan::Home::arena ||
      b.graph->node(source).type.cols() != S * h)
    return;
  if (concat_block_ != ir::kNoNode) grad_block_ = source;
  else concat_block_ = ir::kNoNode;
}

// Per minibatch, after the gather tables: whether every task either has no
// children at all or has them in place, with the children blocks of
// consecutive rows consecutive too (child_base_: row r's first child row).
void VertexRunner::plan_children_blocks() {
  children_blocks_ = false;
  if (grad_block_ == ir::kNoNode || !write_message_grads_ || !options_.on(Optimisation::skip_zero_work)) return;
  const auto S = static_cast<int32_t>(plan_->gather_slots);
  const int64_t rows = schedule_->num_rows();
  child_base_.assign(static_cast<size_t>(rows), -1);
  blocked_rows_.assign(static_cast<size_t>(rows) + 1, 0);
  int64_t next = -1, any = 0;
  unblocked_rows_ = 0;
  for (const Task& t : schedule_->tasks) {
    const bool leaf = child_rows_[0][static_cast<size_t>(t.offset)] < 0;
    if (leaf) unblocked_rows_ = std::max(unblocked_rows_, t.offset + t.bs);
    for (int64_t r = t.offset; r < t.offset + t.bs; ++r) {
      const int32_t c = child_rows_[0][static_cast<size_t>(r)];
      if (!leaf && c < 0) return;  // a task of rows with children and rows without
      for (int32_t k = 0; k < S; ++k) {
        const int32_t want = leaf ? -1 : (next < 0 ? c : static_cast<int32_t>(next)) + k;  // slot k, in order
        if (child_rows_[static_cast<size_t>(k)][static_cast<size_t>(r)] != want) return;
      }
      if (leaf) continue;
      child_base_[static_cast<size_t>(r)] = c;
      next = c + S;
      ++any;
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    blocked_rows_[static_cast<size_t>(r) + 1] = blocked_rows_[static_cast<size_t>(r)] + (child_base_[static_cast<size_t>(r)] >= 0);
  children_blocks_ = any > 0;
}

// The children block of the rows of t (a task, or a run of tasks outside
// the loop) for F's concat or ∂F's gradient of it; no data where the rows
// have no children (their own arena rows then).
MatView VertexRunner::children_block(bool backward, const Task& t) {
  const auto first = static_cast<size_t>(t.offset), end = static_cast<size_t>(t.offset + t.bs);
  const int32_t in_place = blocked_rows_[end] - blocked_rows_[first];
  if (in_place == 0) return {};
  SYLVA_ASSERT(in_place == t.bs, "a run of tasks with children in place and without (rows ", t.offset, ", +", t.bs,
               ")");
  const int64_t S = plan_->gather_slots;
  MatView rows = backward ? scatter_grad_all() : messages();
  rows = rows.block(child_base_[first], S * t.bs);
  return {rows.data, t.bs, S * rows.cols, rows.dtype};
}

bool VertexRunner::in_children_block(const Values& v, const Node& n, const Task& t) {
  if (!children_blocks_) return false;
  const bool mine = v.backward ? n.op == OpKind::GatherGradOut && v.plan->window[static_cast<size_t>(n.id)]
                               : n.id == concat_block_;
  return mine && children_block(v.backward, t).data;
}

}  // namespace sylva::detail
