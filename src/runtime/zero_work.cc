#include "zero_work.h"

#include <algorithm>
#include <cstring>

namespace sylva::detail {

using ir::Node;
using ir::NodeId;

void zero_nodes(const plan::GraphPlan& p, const Absence& a, bool pull_zero, std::span<const uint8_t> zero_f,
                std::vector<uint8_t>& zero, bool push_zero) {
  zero.assign(p.graph->size(), 0);
  for (const Node& n : p.graph->nodes()) {
    bool z = false;
    switch (ir::op_def(n.op).zeros) {
      case ir::Zeros::absent_message: case ir::Zeros::absent_children: z = a.message_absent(n); break;
      case ir::Zeros::pulled_rows: z = pull_zero; break;
      case ir::Zeros::forward_value: z = zero_f[static_cast<size_t>(n.attrs.ref)] != 0; break;
      case ir::Zeros::pushed_grad: z = push_zero; break;
      default: z = ir::zero_from_inputs(n, zero);
    }
    zero[static_cast<size_t>(n.id)] = z;
  }
}

namespace {

std::vector<int32_t> groups_of(const plan::GraphPlan& p) {
  std::vector<int32_t> group_of(p.graph->size(), -1);
  for (size_t k = 0; k < p.fused.size(); ++k)
    for (NodeId m : p.fused[k].members) group_of[static_cast<size_t>(m)] = static_cast<int32_t>(k);
  return group_of;
}

// Whether every consumer of node i of p (group_of: groups_of(p)) leaves
// i's rows unread in a task where i is known zero: a fused group of the
// loop that takes i as an input (it gets one row of zeros), or a product
// that is then zero itself (not run; at a ParamGradOut, unneeded).
bool zero_rows_unread(const plan::GraphPlan& p, const std::vector<int32_t>& group_of, NodeId i) {
  const auto& cs = p.consumers[static_cast<size_t>(i)];
  return !cs.empty() && std::all_of(cs.begin(), cs.end(), [&](NodeId c) {
    const auto ci = static_cast<size_t>(c);
    const int32_t k = group_of[ci];
    if (k >= 0 && k == group_of[static_cast<size_t>(i)]) return true;  // its own group reads the step, not the rows
    if (k >= 0) {
      const auto& in = p.fused[static_cast<size_t>(k)].inputs;
      return p.phase[ci] == plan::Phase::loop && std::find(in.begin(), in.end(), i) != in.end();
    }
    const ir::OpDef& d = ir::op_def(p.graph->node(c).op);
    return d.zeros == ir::Zeros::any && !ir::has(d.flags, ir::OpFlag::boundary) &&
           !ir::has(d.flags, ir::OpFlag::side_effect);
  });
}

}  // namespace

std::vector<uint8_t> unwritten_zero_nodes(const plan::GraphPlan& p, const plan::GraphPlan* backward,
                                          std::span<const NodeId> kept) {
  const std::vector<int32_t> group_of = groups_of(p);
  // F's values ∂F reads: every forward_value of them must leave them unread too.
  std::vector<uint8_t> unread_by_backward(p.graph->size(), 1);
  if (backward) {
    const std::vector<int32_t> backward_groups = groups_of(*backward);
    for (const Node& n : backward->graph->nodes())
      if (ir::op_def(n.op).zeros == ir::Zeros::forward_value && !zero_rows_unread(*backward, backward_groups, n.id))
        unread_by_backward[static_cast<size_t>(n.attrs.ref)] = 0;
  }
  std::vector<uint8_t> out(p.graph->size(), 0);
  for (const Node& n : p.graph->nodes()) {
    const auto i = static_cast<size_t>(n.id);
    out[i] = p.home[i] == plan::Home::arena && unread_by_backward[i] &&
             std::find(kept.begin(), kept.end(), n.id) == kept.end() && zero_rows_unread(p, group_of, n.id);
  }
  return out;
}

void unneeded_nodes(const plan::GraphPlan& backward, const Absence& a, std::span<const uint8_t> zero_b,
                    std::vector<uint8_t>& unneeded) {
  const ir::Graph& dg = *backward.graph;
  unneeded.assign(dg.size(), 0);
  for (size_t i = dg.size(); i-- > 0;) {
    const Node& n = dg.node(static_cast<NodeId>(i));
    const bool zero_in = !n.inputs.empty() && zero_b[static_cast<size_t>(n.inputs[0])] != 0;
    bool d = false;
    switch (ir::op_def(n.op).unneeded) {
      case ir::Unneeded::absent_slot: d = (n.attrs.slot < 64 && (a.slots >> n.attrs.slot & 1u)) || zero_in; break;
      case ir::Unneeded::absent_children: d = a.no_children || zero_in; break;
      case ir::Unneeded::unused_pull: d = a.pull_grad_unused; break;
      case ir::Unneeded::zero_input: d = zero_in; break;
      case ir::Unneeded::by_consumers: {
        const auto& cs = backward.consumers[i];
        d = !cs.empty() &&
            std::all_of(cs.begin(), cs.end(), [&](NodeId c) { return unneeded[static_cast<size_t>(c)] != 0; });
      }
    }
    unneeded[i] = d;
  }
}

const TaskZeros& task_zeros(const plan::VertexPlan& vp, const Absence& a, bool pull_zero, bool push_zero,
                            std::vector<TaskZeros>& memo, TaskZeros& spare) {
  for (const TaskZeros& k : memo)
    if (k.absence == a && k.pull_zero == pull_zero && k.push_zero == push_zero) return k;
  constexpr size_t kMemo = 16;
  TaskZeros& k = memo.size() < kMemo ? memo.emplace_back() : spare;
  k.absence = a;
  k.pull_zero = pull_zero;
  k.push_zero = push_zero;
  zero_nodes(vp.forward, a, pull_zero, {}, k.zero_f);  // F reads no forward values
  zero_nodes(vp.backward, a, false, k.zero_f, k.zero_b, push_zero);
  unneeded_nodes(vp.backward, a, k.zero_b, k.unneeded);
  return k;
}

bool all_zero_bytes(const MatView& v) {
  const size_t n = static_cast<size_t>(v.numel()) * dtype_size(v.dtype);
  const auto* p = static_cast<const unsigned char*>(v.data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w) return false;
  }
  for (; i < n; ++i)
    if (p[i]) return false;
  return true;
}

}  // namespace sylva::detail
