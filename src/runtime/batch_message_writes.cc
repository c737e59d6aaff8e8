// Pass plan_message_writes: where every row's message gradient has at most
// one gather gradient writing it (trees or chains, each slot gathered
// once), the one that does writes the row and only the rows none writes
// (roots) are zeroed -- no zero fill of every row before ∂F's loop and no
// read of it under an add. DAGs, a slot gathered twice and gather_reduce
// keep the fill and the adds.
#include "sylva/runtime/batch_plan.h"

namespace sylva {

BatchPlan plan_message_writes(BatchPlan p, const plan::VertexPlan& vp) {
  p.write_message_grads = false;
  p.unwritten_rows.clear();
  if (vp.scatter_source == ir::kNoNode || vp.gathers_all) return p;
  std::vector<uint8_t> writers(static_cast<size_t>(p.rows), 0);
  for (int64_t slot : vp.gather_grad_slots)
    for (int32_t c : p.child_rows[static_cast<size_t>(slot)])
      if (c >= 0 && ++writers[static_cast<size_t>(c)] > 1) return p;
  for (int64_t r = 0; r < p.rows; ++r)
    if (!writers[static_cast<size_t>(r)]) p.unwritten_rows.push_back(static_cast<int32_t>(r));
  p.write_message_grads = true;
  return p;
}

}  // namespace sylva
