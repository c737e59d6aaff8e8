// Pass plan_children_blocks (Optimisation::children_in_place): where every
// parent's children sit in consecutive rows in slot order, and parents in
// row order have consecutive children blocks (complete trees in BFS order:
// Cavs's contiguous blocks), F's concat of the gathered messages is a view
// of the children's message rows -- [bs, S·h] is the same memory as the
// [S·bs, h] rows of the messages -- and ∂F writes the gradient of that
// concat straight into the children's message-gradient rows. Neither the
// gathers nor the gather gradients copy a row.
#include <algorithm>

#include "sylva/runtime/batch_plan.h"

namespace sylva {

// Whether every task either has no children at all or has them in place,
// with the children blocks of consecutive rows consecutive too.
BatchPlan plan_children_blocks(BatchPlan p, const plan::VertexPlan& vp) {
  const plan::VertexPlan::ChildrenBlock nodes = vp.children_block;
  BatchPlan::Children& c = p.children;
  std::vector<int32_t> first = std::move(c.first_child), blocked = std::move(c.blocked);  // their memory reused
  c = {};
  if (nodes.grad == ir::kNoNode || !p.write_message_grads) return p;
  const auto S = static_cast<int32_t>(vp.gather_slots);
  const auto rows = static_cast<size_t>(p.rows);
  first.assign(rows, -1);
  int64_t next = -1, any = 0, concat_rows = 0;
  for (const Task& t : p.tasks) {
    const bool leaf = p.child_rows[0][static_cast<size_t>(t.offset)] < 0;
    if (leaf) concat_rows = std::max(concat_rows, t.offset + t.bs);
    for (int64_t r = t.offset; r < t.offset + t.bs; ++r) {
      const int32_t child = p.child_rows[0][static_cast<size_t>(r)];
      if (!leaf && child < 0) return p;  // a task of rows with children and rows without
      for (int32_t k = 0; k < S; ++k) {
        const int32_t want = leaf ? -1 : (next < 0 ? child : static_cast<int32_t>(next)) + k;  // slot k, in order
        if (p.child_rows[static_cast<size_t>(k)][static_cast<size_t>(r)] != want) return p;
      }
      if (leaf) continue;
      first[static_cast<size_t>(r)] = child;
      next = child + S;
      ++any;
    }
  }
  if (any == 0) return p;
  c.in_place = true;
  c.nodes = nodes;
  c.first_child = std::move(first);
  c.blocked = std::move(blocked);
  c.blocked.assign(rows + 1, 0);
  for (size_t r = 0; r < rows; ++r) c.blocked[r + 1] = c.blocked[r] + (c.first_child[r] >= 0);
  c.concat_rows = concat_rows;
  return p;
}

}  // namespace sylva
