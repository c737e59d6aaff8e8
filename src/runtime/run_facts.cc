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

// Lent arenas: some values of F keep a row per vertex although nothing
// reads them once F's task loop is done -- a product computed before the
// loop for every row (x·W of a Tree-LSTM, read only by its task's fused
// gate group) is the common case. ∂F runs after F, so its values that keep
// every row can live in those arenas instead of arenas of their own.
// Lenders: F's values with rows for the whole minibatch (has_rows, not
// task-local) that ∂F does not read (no forward_value of it) and that are
// not read outside F's loop: not the scatter source (parents' gathers,
// children in place), the push source, the pull or the concat that views
// the children's rows. Borrowers: ∂F's values with rows for the whole
// minibatch, but the gather-gradient block that may view the children's
// message gradients. The widest borrower takes the widest lender, and so on
// down: that pairing lends the most bytes per row.
std::vector<NodeId> lenders_of(const plan::VertexPlan& vp, const RunFacts& f, Optimisations on) {
  const plan::GraphPlan &fw = vp.forward, &bw = vp.backward;
  std::vector<NodeId> lender(bw.graph->size(), ir::kNoNode);
  if (!on.has(Optimisation::lend_forward_arenas)) return lender;
  std::vector<uint8_t> kept(fw.graph->size(), 0);
  for (const ir::Node& n : bw.graph->nodes())
    if (bw.home[static_cast<size_t>(n.id)] == plan::Home::forward) kept[static_cast<size_t>(n.attrs.ref)] = 1;
  // The children blocks' nodes are read in place where a batch allows (batch_children_blocks.cc): never lent.
  const plan::VertexPlan::ChildrenBlock blocks = f.row_windows && on.has(Optimisation::children_in_place)
                                                     ? vp.children_block
                                                     : plan::VertexPlan::ChildrenBlock{};
  for (NodeId id : {vp.scatter_source, vp.push_source, vp.pull, blocks.concat})
    if (id != ir::kNoNode) kept[static_cast<size_t>(id)] = 1;
  const auto whole = [&f](const plan::GraphPlan& p, const GraphRunFacts& g, NodeId id) {
    return has_rows(f, p, g, static_cast<size_t>(id)) && !g.task_local[static_cast<size_t>(id)];
  };
  std::vector<NodeId> lenders, borrowers;
  for (const ir::Node& n : fw.graph->nodes())
    if (whole(fw, f.forward, n.id) && !kept[static_cast<size_t>(n.id)]) lenders.push_back(n.id);
  for (const ir::Node& n : bw.graph->nodes())
    if (whole(bw, f.backward, n.id) && n.id != blocks.grad) borrowers.push_back(n.id);
  const auto widest_first = [](const ir::Graph& g) {
    const auto bytes = [&g](NodeId id) { return static_cast<size_t>(g.node(id).type.shape.numel()) * dtype_size(g.node(id).type.dtype); };
    return [bytes](NodeId a, NodeId c) { return bytes(a) > bytes(c); };
  };
  std::stable_sort(lenders.begin(), lenders.end(), widest_first(*fw.graph));
  std::stable_sort(borrowers.begin(), borrowers.end(), widest_first(*bw.graph));
  for (size_t k = 0; k < std::min(lenders.size(), borrowers.size()); ++k)
    lender[static_cast<size_t>(borrowers[k])] = lenders[k];
  return lender;
}

}  // namespace

bool has_rows(const RunFacts& facts, const plan::GraphPlan& p, const GraphRunFacts& g, size_t i) {
  return p.home[i] == plan::Home::arena && !(facts.row_windows && p.in_window[i]) && g.inside_group[i] < 0;
}

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
  f.lender = lenders_of(vp, f, on);
  return f;
}

bool output_unused(const RunFacts& facts, const GraphRunFacts& g, bool backward, size_t i,
                   std::span<const uint8_t> zero, std::span<const uint8_t> unneeded) {
  if (!facts.skip_zero_work || !facts.trim_fused_zeros) return false;
  if (backward && unneeded[i]) return true;
  return zero[i] && g.unwritten[i];
}

bool skips_when_zero(const ir::Node& n, plan::Home h) {
  const ir::OpDef& d = ir::op_def(n.op);  // a gather of a slot and the pushed gradient: boundary ops that skip
  return h != plan::Home::none && (d.zeros == ir::Zeros::absent_message || d.zeros == ir::Zeros::pushed_grad ||
                                   !ir::has(d.flags, ir::OpFlag::boundary));
}

}  // namespace sylva
