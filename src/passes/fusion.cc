#include "sylva/passes/fusion.h"

#include <algorithm>
#include <numeric>

#include "sylva/core/error.h"

namespace sylva::passes {

using ir::Node;
using ir::NodeId;

namespace {

// Whether some path leaves the nodes with label `id` and comes back.
bool convex(const ir::Graph& g, const std::vector<int32_t>& label, int32_t id) {
  std::vector<uint8_t> outside_after(g.size(), 0);  // not in the group, reachable from it
  for (const Node& n : g.nodes()) {
    const bool in = label[static_cast<size_t>(n.id)] == id;
    for (NodeId src : n.inputs) {
      const bool from_group = label[static_cast<size_t>(src)] == id;
      const bool tainted = outside_after[static_cast<size_t>(src)] != 0;
      if (in && tainted) return false;
      if (!in && (from_group || tainted)) outside_after[static_cast<size_t>(n.id)] = 1;
    }
  }
  return true;
}

}  // namespace

std::vector<int32_t> fusion_groups(const ir::Graph& g, const std::vector<bool>& fusible) {
  SYLVA_CHECK(fusible.size() == g.size(), "[fusion] ", fusible.size(), " flags for ", g.size(), " nodes");
  std::vector<int32_t> label(g.size(), -1);
  for (const Node& n : g.nodes())
    if (fusible[static_cast<size_t>(n.id)]) label[static_cast<size_t>(n.id)] = n.id;
  for (const Node& n : g.nodes()) {
    if (!fusible[static_cast<size_t>(n.id)]) continue;
    for (NodeId src : n.inputs) {
      const int32_t a = label[static_cast<size_t>(src)], b = label[static_cast<size_t>(n.id)];
      if (a < 0 || a == b) continue;
      // Union: relabel b's members as a; undo if the result is not convex.
      std::vector<int32_t> moved;
      for (size_t i = 0; i < label.size(); ++i)
        if (label[i] == b) {
          label[i] = a;
          moved.push_back(static_cast<int32_t>(i));
        }
      if (!convex(g, label, a))
        for (int32_t i : moved) label[static_cast<size_t>(i)] = b;
    }
  }
  // Number the groups with two or more members in order of their first node.
  std::vector<int32_t> size(g.size(), 0), number(g.size(), -1), out(g.size(), -1);
  for (int32_t l : label)
    if (l >= 0) ++size[static_cast<size_t>(l)];
  int32_t next = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    const int32_t l = label[i];
    if (l < 0 || size[static_cast<size_t>(l)] < 2) continue;
    if (number[static_cast<size_t>(l)] < 0) number[static_cast<size_t>(l)] = next++;
    out[i] = number[static_cast<size_t>(l)];
  }
  return out;
}

std::vector<int32_t> unit_order(const ir::Graph& g, const std::vector<int32_t>& group) {
  SYLVA_CHECK(group.size() == g.size(), "[fusion] ", group.size(), " group labels for ", g.size(), " nodes");
  const auto unit_of = [&](NodeId id) {
    const int32_t gr = group[static_cast<size_t>(id)];
    return gr >= 0 ? -1 - gr : id;
  };
  // Units in order of their first node; each waits for the units it reads.
  std::vector<int32_t> units;
  std::vector<std::vector<int32_t>> deps;
  std::vector<int32_t> index_of_group;
  for (const Node& n : g.nodes()) {
    const int32_t u = unit_of(n.id);
    size_t k;
    if (u >= 0) {
      k = units.size();
      units.push_back(u);
      deps.emplace_back();
    } else {
      const auto gr = static_cast<size_t>(-1 - u);
      if (index_of_group.size() <= gr) index_of_group.resize(gr + 1, -1);
      if (index_of_group[gr] < 0) {
        index_of_group[gr] = static_cast<int32_t>(units.size());
        units.push_back(u);
        deps.emplace_back();
      }
      k = static_cast<size_t>(index_of_group[gr]);
    }
    for (NodeId src : n.inputs)
      if (unit_of(src) != u) deps[k].push_back(unit_of(src));
  }
  std::vector<int32_t> order;
  std::vector<uint8_t> done(units.size(), 0), node_done(g.size(), 0), group_done(index_of_group.size(), 0);
  const auto emitted = [&](int32_t unit) {
    return unit >= 0 ? node_done[static_cast<size_t>(unit)] != 0 : group_done[static_cast<size_t>(-1 - unit)] != 0;
  };
  while (order.size() < units.size()) {
    bool progress = false;
    for (size_t k = 0; k < units.size(); ++k) {
      if (done[k] || !std::all_of(deps[k].begin(), deps[k].end(), emitted)) continue;
      order.push_back(units[k]);
      done[k] = 1;
      (units[k] >= 0 ? node_done[static_cast<size_t>(units[k])] : group_done[static_cast<size_t>(-1 - units[k])]) = 1;
      progress = true;
      break;  // restart: earlier units first
    }
    SYLVA_CHECK(progress, "[fusion] the groups of graph '", g.name(), "' form a cycle (internal)");
  }
  return order;
}

ir::FusedProgram without_zero_inputs(const ir::FusedProgram& p, std::span<const uint8_t> zero_input,
                                     std::span<const uint8_t> unused_output) {
  const auto any = [](std::span<const uint8_t> f) {
    return std::any_of(f.begin(), f.end(), [](uint8_t z) { return z != 0; });
  };
  if (!any(zero_input) && !any(unused_output)) return p;
  const size_t S = p.steps.size();
  std::vector<ir::FusedStep> steps = p.steps;
  for (ir::FusedStep& st : steps) {  // an output not written is a step like the others
    const auto k = static_cast<size_t>(st.output);
    if (st.output >= 0 && k < unused_output.size() && unused_output[k]) st.output = -1;
  }
  std::vector<uint8_t> zero(S, 0);
  // What each step's value is: itself, or (a sum with a zero term) another
  // step's or an external input's (< 0), in the program's own numbering.
  std::vector<int32_t> same(S);
  const auto is_zero = [&](int32_t a) {
    return a < 0 ? zero_input[static_cast<size_t>(-1 - a)] != 0 : zero[static_cast<size_t>(a)] != 0;
  };
  for (size_t s = 0; s < S; ++s) {
    ir::FusedStep& st = steps[s];
    for (int32_t& a : st.args)
      if (a >= 0) a = same[static_cast<size_t>(a)];
    same[s] = static_cast<int32_t>(s);
    bool z = false;
    switch (ir::op_def(st.op).zeros) {
      case ir::Zeros::any: z = std::any_of(st.args.begin(), st.args.end(), is_zero); break;
      case ir::Zeros::all: z = !st.args.empty() && std::all_of(st.args.begin(), st.args.end(), is_zero); break;
      case ir::Zeros::input0: z = !st.args.empty() && is_zero(st.args[0]); break;
      case ir::Zeros::input1: z = st.args.size() > 1 && is_zero(st.args[1]); break;
      default: break;
    }
    zero[s] = z;
    if (z) continue;
    if (st.op == ir::OpKind::Add && st.args.size() == 2 && (is_zero(st.args[0]) || is_zero(st.args[1])))
      same[s] = is_zero(st.args[0]) ? st.args[1] : st.args[0];
    else if (st.op == ir::OpKind::Sub && st.args.size() == 2 && is_zero(st.args[1]))
      same[s] = st.args[0];
    else if (st.op == ir::OpKind::Assemble) {
      size_t kept = 0;
      for (size_t k = 0; k < st.args.size(); ++k)
        if (!is_zero(st.args[k])) {
          st.args[kept] = st.args[k];
          st.offsets[kept++] = st.offsets[k];
        }
      st.args.resize(kept);
      st.offsets.resize(kept);
    }
  }
  // Which steps run: the outputs, and what the running ones read.
  std::vector<uint8_t> runs(S, 0);
  for (size_t s = S; s-- > 0;) {
    if (steps[s].output >= 0) runs[s] = 1;
    if (!runs[s]) continue;
    if (same[s] != static_cast<int32_t>(s)) {  // an output that is another value: a copy of it
      const int32_t src = same[s];
      if (src >= 0) runs[static_cast<size_t>(src)] = 1;
      continue;
    }
    for (int32_t a : steps[s].args)
      if (a >= 0) runs[static_cast<size_t>(a)] = 1;
  }
  ir::FusedProgram out;
  out.name = p.name;
  std::vector<int32_t> index(S, -1);  // new step index of each step that runs
  for (size_t s = 0; s < S; ++s) {
    if (!runs[s]) continue;
    ir::FusedStep st = steps[s];
    if (same[s] != static_cast<int32_t>(s)) st = ir::fused_step(ir::OpKind::Slice, {same[s]}, st.cols, st.output);
    for (int32_t& a : st.args)
      if (a >= 0) a = index[static_cast<size_t>(a)];
    index[s] = static_cast<int32_t>(out.steps.size());
    out.steps.push_back(std::move(st));
  }
  return out;
}

}  // namespace sylva::passes
