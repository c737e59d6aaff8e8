// What the runner and the batch plan's passes read about a vertex plan under
// the executor's options: fused-group membership, which known-zero values
// may stay unwritten, which values are task-local. Worked out once per
// runner, from the plan alone.
#include <algorithm>

#include "sylva/runtime/batch_plan.h"
#include "zero_work.h"

namespace sylva {

using ir::NodeId;

namespace {

GraphRunFacts graph_facts(const plan::GraphPlan& p, bool task_local_values, std::vector<uint8_t> unwritten) {
  const size_t n = p.graph->size();
  GraphRunFacts g;
  g.group.assign(n, -1);
  g.inside_group.assign(n, -1);
  for (size_t k = 0; k < p.fused.size(); ++k)
    for (NodeId m : p.fused[k].members) {
      g.group[static_cast<size_t>(m)] = static_cast<int32_t>(k);
      if (std::find(p.fused[k].outputs.begin(), p.fused[k].outputs.end(), m) == p.fused[k].outputs.end())
        g.inside_group[static_cast<size_t>(m)] = static_cast<int32_t>(k);
    }
  g.unwritten = std::move(unwritten);
  g.task_local.assign(n, 0);
  for (size_t i = 0; i < n && task_local_values; ++i) g.task_local[i] = p.task_local[i];
  return g;
}

}  // namespace

RunFacts run_facts(const plan::VertexPlan& vp, Optimisations on, bool row_windows) {
  RunFacts f;
  const bool task_local = on.has(Optimisation::task_local_values);
  // The messages and the pushed rows are read from outside F: never left unwritten.
  const NodeId kept[] = {vp.push_col >= 0 ? ir::kNoNode : vp.push_source, vp.scatter_source};
  f.forward = graph_facts(vp.forward, task_local, detail::unwritten_zero_nodes(vp.forward, &vp.backward, kept));
  f.backward = graph_facts(vp.backward, task_local, detail::unwritten_zero_nodes(vp.backward, nullptr, {}));
  f.skip_zero_work = on.has(Optimisation::skip_zero_work);
  f.trim_fused_zeros = on.has(Optimisation::trim_fused_zeros);
  f.row_windows = row_windows;
  return f;
}

bool output_unused(const RunFacts& facts, const GraphRunFacts& g, bool backward, size_t i,
                   std::span<const uint8_t> zero, std::span<const uint8_t> unneeded) {
  if (!facts.skip_zero_work || !facts.trim_fused_zeros) return false;
  if (backward && unneeded[i]) return true;
  return zero[i] && g.unwritten[i];
}

bool skips_when_zero(const ir::Node& n, plan::Home h) {
  return h != plan::Home::none && (n.op == ir::OpKind::Gather || n.op == ir::OpKind::PushGradIn ||
                                   !ir::has(ir::op_def(n.op).flags, ir::OpFlag::boundary));
}

}  // namespace sylva
