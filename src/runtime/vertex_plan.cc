// Plans of a VertexRunner: which nodes of F and ∂F run before, in and after
// the task loop (eager and lazy batching), and which run fused.
#include <algorithm>

#include "sylva/passes/fusion.h"
#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

// Eager batching: nodes that depend on no message from a child (gather in
// F, scatter gradient in ∂F) run before the task loop; nodes whose result
// reaches no message to another vertex (scatter in F, gather gradients in
// ∂F) run after it -- each once over all rows (per run of tasks that need
// it) instead of once per task. Lazy batching moves parameter gradients
// dW += Xᵀ·dY after the loop on its own. A node after the loop must not
// read a fixed-size value of the loop (it would see the last task's only),
// and no node of the loop may read one computed after it; a parameter's
// gradient outputs share one phase.
void VertexRunner::plan_phases(Values& v, bool backward) {
  const ir::Graph& g = *v.graph;
  const size_t size = g.size();
  const auto carried_in = [&](const Node& n) {
    return backward ? n.op == OpKind::ScatterGradIn : n.op == OpKind::Gather || n.op == OpKind::GatherReduce;
  };
  const auto carried_out = [&](const Node& n) {
    return backward ? n.op == OpKind::GatherGradOut || n.op == OpKind::GatherReduceGradOut : n.op == OpKind::Scatter;
  };
  const auto runs = [&](NodeId id) { return v.home[id] == Home::arena || v.home[id] == Home::fixed ||
                                            v.home[id] == Home::none; };
  std::vector<std::vector<NodeId>> consumers(size);
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs) consumers[static_cast<size_t>(in)].push_back(n.id);
  std::vector<uint8_t> pre_ok(size, 0), feeds_out(size, 0);
  for (const Node& n : g.nodes()) {
    bool ok = !carried_in(n);
    for (NodeId in : n.inputs) ok = ok && pre_ok[static_cast<size_t>(in)];
    pre_ok[static_cast<size_t>(n.id)] = ok;
  }
  for (size_t i = size; i-- > 0;) {
    bool f = carried_out(g.node(static_cast<NodeId>(i)));
    for (NodeId c : consumers[i]) f = f || feeds_out[static_cast<size_t>(c)];
    feeds_out[i] = f;
  }
  // A matmul folded into its ParamGradOut runs there: it takes that phase.
  const auto folded = [&](NodeId id) { return backward && folded_[static_cast<size_t>(id)]; };
  std::vector<Phase>& ph = v.phase;
  ph.assign(size, Phase::loop);
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (!runs(n.id)) {
      ph[i] = Phase::pre;  // parameters, forward values, the scatter gradient: read anywhere
      continue;
    }
    const bool boundary_out = n.op == OpKind::GatherGradOut || n.op == OpKind::GatherReduceGradOut ||
                              n.op == OpKind::Scatter || n.op == OpKind::Push || n.op == OpKind::ParamGradOut;
    if (eager_ && pre_ok[i] && !boundary_out && !folded(n.id)) {
      ph[i] = Phase::pre;
    } else if (!feeds_out[i] && !carried_in(n) && !folded(n.id) && n.op != OpKind::Scatter &&
               n.op != OpKind::Push && (n.type.rowed || v.home[i] == Home::none) &&
               (eager_ || (lazy_ && n.op == OpKind::ParamGradOut))) {
      ph[i] = Phase::post;
    }
  }
  const auto inputs_of = [&](const Node& n) -> const std::vector<NodeId>& {
    return n.op == OpKind::ParamGradOut && folded(n.inputs[0]) ? g.node(n.inputs[0]).inputs : n.inputs;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes()) {
      const auto i = static_cast<size_t>(n.id);
      if (folded(n.id)) continue;
      for (NodeId in : inputs_of(n)) {
        const auto j = static_cast<size_t>(in);
        if (ph[i] == Phase::post && ph[j] == Phase::loop && !g.node(in).type.rowed) {
          ph[i] = Phase::loop;  // would read only the last task's fixed-size value
          changed = true;
        } else if (ph[i] != Phase::post && ph[j] == Phase::post) {
          ph[j] = Phase::loop;  // needed inside the loop
          changed = true;
        }
      }
    }
    // All gradient outputs of one parameter share a phase, so that with
    // streaming only one thread accumulates into its gradient.
    for (const Node& n : g.nodes()) {
      if (n.op != OpKind::ParamGradOut || ph[static_cast<size_t>(n.id)] != Phase::post) continue;
      for (const Node& o : g.nodes())
        if (o.op == OpKind::ParamGradOut && o.attrs.name == n.attrs.name &&
            ph[static_cast<size_t>(o.id)] == Phase::loop) {
          ph[static_cast<size_t>(n.id)] = Phase::loop;
          changed = true;
          break;
        }
    }
  }
  v.pre.clear();
  v.post.clear();
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (folded(n.id)) {
      for (NodeId c : consumers[i]) ph[i] = ph[static_cast<size_t>(c)];
      continue;
    }
    if (!runs(n.id)) continue;
    if (ph[i] == Phase::pre) v.pre.push_back(n.id);
    if (ph[i] == Phase::post) v.post.push_back(n.id);
  }
}

void VertexRunner::ensure_phases() {
  if (!phases_dirty_) return;
  if (fusion_) grad_graph();  // F's groups must write out what ∂F reads
  plan_phases(fwd_, false);
  plan_fusion(fwd_, false);
  if (df_) {
    plan_phases(bwd_, true);
    plan_fusion(bwd_, true);
  }
  phases_dirty_ = false;
}

void VertexRunner::plan_fusion(Values& v, bool backward) {
  const ir::Graph& g = *v.graph;
  std::vector<int32_t> group(g.size(), -1);
  if (fusion_) {
    std::vector<bool> fusible(g.size(), false);
    for (const Node& n : g.nodes())
      fusible[static_cast<size_t>(n.id)] = v.home[n.id] == Home::arena && v.phase[n.id] == Phase::loop &&
                                           fusible_op(n.op) && !(backward && folded_[n.id]);
    group = passes::fusion_groups(g, fusible);
  }
  v.order = passes::unit_order(g, group);
  v.fused.assign(static_cast<size_t>(*std::max_element(group.begin(), group.end()) + 1), {});
  // A member's value is written out if a node outside its group reads it, or ∂F does.
  std::vector<uint8_t> read_outside(g.size(), 0);
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs)
      if (group[static_cast<size_t>(in)] < 0 || group[static_cast<size_t>(in)] != group[static_cast<size_t>(n.id)])
        read_outside[static_cast<size_t>(in)] = 1;
  if (!backward && df_)
    for (const Node& n : df_->nodes())
      if (n.op == OpKind::ForwardValue) read_outside[static_cast<size_t>(n.attrs.ref)] = 1;
  for (const Node& n : g.nodes())
    if (const int32_t gr = group[static_cast<size_t>(n.id)]; gr >= 0)
      v.fused[static_cast<size_t>(gr)].members.push_back(n.id);
  for (size_t k = 0; k < v.fused.size(); ++k) {
    Values::Fused& f = v.fused[k];
    std::vector<int32_t> step_of(g.size(), -1);
    for (NodeId m : f.members) {
      const Node& n = g.node(m);
      FusedStep st;
      st.op = n.op;
      st.cols = n.type.cols();
      st.begin = n.attrs.begin;
      st.alpha = n.attrs.alpha;
      for (size_t a = 0; a < n.inputs.size(); ++a) {
        const NodeId in = n.inputs[a];
        if (group[static_cast<size_t>(in)] == static_cast<int32_t>(k)) {
          st.args.push_back(step_of[static_cast<size_t>(in)]);
        } else {
          auto it = std::find(f.inputs.begin(), f.inputs.end(), in);
          if (it == f.inputs.end()) it = f.inputs.insert(f.inputs.end(), in);
          st.args.push_back(-1 - static_cast<int32_t>(it - f.inputs.begin()));
        }
        if (n.op == OpKind::Assemble) st.offsets.push_back(n.attrs.ranges[2 * a]);
      }
      if (read_outside[static_cast<size_t>(m)]) {
        st.output = static_cast<int32_t>(f.outputs.size());
        f.outputs.push_back(m);
      }
      step_of[static_cast<size_t>(m)] = static_cast<int32_t>(f.program.steps.size());
      f.program.steps.push_back(std::move(st));
      f.program.name += (f.program.name.empty() ? "" : "+") + std::string(ir::op_name(n.op));
    }
  }
}

std::vector<std::vector<NodeId>> VertexRunner::fused_groups(bool backward) const {
  std::vector<std::vector<NodeId>> out;
  for (const Values::Fused& f : (backward ? bwd_ : fwd_).fused) out.push_back(f.members);
  return out;
}

}  // namespace sylva::detail
