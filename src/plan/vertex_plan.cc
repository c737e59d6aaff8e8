// Building a VertexPlan: validation, ∂F, IOS, folding, then the phases of
// eager and lazy batching and the fused groups of F and ∂F.
#include "sylva/plan/vertex_plan.h"

#include <algorithm>
#include <initializer_list>

#include "sylva/core/error.h"
#include "sylva/passes/autodiff.h"
#include "sylva/passes/fusion.h"
#include "sylva/sched/ios_ir.h"

namespace sylva::plan {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

namespace {

// F must be per-vertex: a fixed-size value computed from per-vertex values
// (a reduction over rows) would depend on how vertices are batched.
void validate(const ir::Graph& g) {
  const bool scatters = !g.find(OpKind::Scatter).empty();
  SYLVA_CHECK(scatters || (g.find(OpKind::Gather).empty() && g.find(OpKind::GatherReduce).empty()),
              "[vertex_function] '", g.name(), "' gathers children's messages but never scatters one");
  std::vector<bool> per_vertex(g.size(), false);
  for (const Node& n : g.nodes()) {
    bool dep = n.type.rowed;
    for (NodeId in : n.inputs) dep = dep || per_vertex[in];
    per_vertex[n.id] = dep;
    SYLVA_CHECK(n.type.rowed || !dep, "[vertex_function] '", g.name(), "' node ", n.id, " (",
                ir::op_name(n.op), ") reduces per-vertex values to ", n.type.str(),
                "; F must compute each vertex independently (reduce in the program instead)");
    SYLVA_CHECK(n.op != OpKind::InputIds, "[vertex_function] input_ids is not available inside F");
  }
}

Home home_of(const Node& n) {
  switch (n.op) {
    case OpKind::Param: return Home::param;
    case OpKind::ForwardValue: return Home::forward;
    case OpKind::ScatterGradIn: return Home::scatter_grad;
    default: break;
  }
  // Markers and gradient outputs write into other values; the rest are theirs.
  if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::side_effect) || n.op == OpKind::Scatter || n.op == OpKind::Push)
    return Home::none;
  return n.type.rowed ? Home::arena : Home::fixed;
}

GraphPlan start_plan(std::shared_ptr<const ir::Graph> graph) {
  GraphPlan p;
  p.graph = std::move(graph);
  const ir::Graph& g = *p.graph;
  p.home.resize(g.size());
  p.consumers.assign(g.size(), {});
  for (const Node& n : g.nodes()) {
    p.home[static_cast<size_t>(n.id)] = home_of(n);
    for (NodeId in : n.inputs) p.consumers[static_cast<size_t>(in)].push_back(n.id);
  }
  p.folded.assign(g.size(), 0);
  p.phase.assign(g.size(), Phase::loop);
  p.window.assign(g.size(), 0);
  p.in_window.assign(g.size(), 0);
  p.task_local.assign(g.size(), 0);
  return p;
}

// Which nodes depend on no message from a child (gather in F, scatter
// gradient in ∂F), and which reach a message to another vertex (scatter in
// F, gather gradients in ∂F).
struct Reach {
  std::vector<uint8_t> pre_ok, feeds_out;
};

bool carried_in(const Node& n, bool backward) {
  return backward ? n.op == OpKind::ScatterGradIn : n.op == OpKind::Gather || n.op == OpKind::GatherReduce;
}

Reach reach(const GraphPlan& p, bool backward) {
  const ir::Graph& g = *p.graph;
  const size_t size = g.size();
  const auto carried_out = [&](const Node& n) {
    return backward ? n.op == OpKind::GatherGradOut || n.op == OpKind::GatherReduceGradOut : n.op == OpKind::Scatter;
  };
  Reach r{std::vector<uint8_t>(size, 0), std::vector<uint8_t>(size, 0)};
  for (const Node& n : g.nodes()) {
    bool ok = !carried_in(n, backward);
    for (NodeId in : n.inputs) ok = ok && r.pre_ok[static_cast<size_t>(in)];
    r.pre_ok[static_cast<size_t>(n.id)] = ok;
  }
  for (size_t i = size; i-- > 0;) {
    bool f = carried_out(g.node(static_cast<NodeId>(i)));
    for (NodeId c : p.consumers[i]) f = f || r.feeds_out[static_cast<size_t>(c)];
    r.feeds_out[i] = f;
  }
  return r;
}

// The first assignment of phases, before the constraints between them.
void initial_phases(GraphPlan& p, const PlanOptions& o, bool backward) {
  const Reach r = reach(p, backward);
  for (const Node& n : p.graph->nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (!p.runs(n.id)) {
      p.phase[i] = Phase::pre;  // parameters, forward values, the scatter gradient: read anywhere
      continue;
    }
    const bool boundary_out = n.op == OpKind::GatherGradOut || n.op == OpKind::GatherReduceGradOut ||
                              n.op == OpKind::Scatter || n.op == OpKind::Push || n.op == OpKind::ParamGradOut;
    const bool folded = p.folded[i] != 0;
    if (o.eager_batching && r.pre_ok[i] && !boundary_out && !folded) {
      p.phase[i] = Phase::pre;
    } else if (!r.feeds_out[i] && !carried_in(n, backward) && !folded && n.op != OpKind::Scatter &&
               n.op != OpKind::Push && (n.type.rowed || p.home[i] == Home::none) &&
               (o.eager_batching || (o.lazy_param_grads && n.op == OpKind::ParamGradOut))) {
      p.phase[i] = Phase::post;
    }
  }
}

// One pass of the constraints; returns whether a phase changed. A node
// after the loop must not read a fixed-size value of the loop (it would
// see the last task's only), no node of the loop may read one computed
// after it, and all gradient outputs of one parameter share a phase (so
// that with streaming only one thread accumulates into its gradient).
bool constrain_phases(GraphPlan& p) {
  const ir::Graph& g = *p.graph;
  std::vector<Phase>& ph = p.phase;
  const auto inputs_of = [&](const Node& n) -> const std::vector<NodeId>& {
    return n.op == OpKind::ParamGradOut && p.folded[n.inputs[0]] ? g.node(n.inputs[0]).inputs : n.inputs;
  };
  bool changed = false;
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (p.folded[i]) continue;
    for (NodeId in : inputs_of(n)) {
      const auto j = static_cast<size_t>(in);
      if (ph[i] == Phase::post && ph[j] == Phase::loop && !g.node(in).type.rowed) {
        ph[i] = Phase::loop;
        changed = true;
      } else if (ph[i] != Phase::post && ph[j] == Phase::post) {
        ph[j] = Phase::loop;
        changed = true;
      }
    }
  }
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
  return changed;
}

// Eager batching: nodes that depend on no message from a child run before
// the task loop; nodes whose result reaches no message to another vertex
// run after it -- each once over all rows (per run of tasks that need it)
// instead of once per task. Lazy batching moves parameter gradients
// dW += Xᵀ·dY after the loop on its own.
void plan_phases(GraphPlan& p, const PlanOptions& o, bool backward) {
  initial_phases(p, o, backward);
  while (constrain_phases(p)) {
  }
  // ∂F's pushed gradient read only in the loop is copied in task by task,
  // as each task needs it (then task-local), not for every row before it.
  if (backward)
    for (const Node& n : p.graph->nodes()) {
      const auto i = static_cast<size_t>(n.id);
      const auto in_loop = [&](NodeId c) {
        return p.phase[static_cast<size_t>(c)] == Phase::loop && !p.folded[static_cast<size_t>(c)];
      };
      if (n.op == OpKind::PushGradIn && p.phase[i] == Phase::pre && !p.consumers[i].empty() &&
          std::all_of(p.consumers[i].begin(), p.consumers[i].end(), in_loop))
        p.phase[i] = Phase::loop;
    }
  for (const Node& n : p.graph->nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (p.folded[i]) {  // a folded matmul runs at its ParamGradOut: it takes that phase
      for (NodeId c : p.consumers[i]) p.phase[i] = p.phase[static_cast<size_t>(c)];
      continue;
    }
    if (!p.runs(n.id)) continue;
    if (p.phase[i] == Phase::pre) p.pre.push_back(n.id);
    if (p.phase[i] == Phase::post) p.post.push_back(n.id);
  }
}

// Row windows (GraphPlan::window): F's concats of gathers and ∂F's gather
// gradients of slices, where the gathers or the slice feed nothing else, run
// in the task loop and are not read by ∂F (`df`, when planning F). Only
// shapes that fusion leaves alone (no fusible neighbour) are windowed, so
// the fused groups are the same whether a backend has windows or not.
void plan_windows(GraphPlan& p, const ir::Graph* df) {
  const ir::Graph& g = *p.graph;
  std::vector<uint8_t> read_by_df(g.size(), 0);
  if (df)
    for (const Node& n : df->nodes())
      if (n.op == OpKind::ForwardValue) read_by_df[static_cast<size_t>(n.attrs.ref)] = 1;
  const auto only_for = [&](NodeId in, NodeId user) {
    const auto i = static_cast<size_t>(in);
    if (p.home[i] != Home::arena || p.phase[i] != Phase::loop || read_by_df[i]) return false;
    return std::all_of(p.consumers[i].begin(), p.consumers[i].end(), [&](NodeId c) { return c == user; });
  };
  const auto fusible_node = [&](NodeId id) { return ir::fusible(g.node(id).op); };
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<size_t>(n.id);
    if (n.op == OpKind::Concat && p.home[i] == Home::arena && p.phase[i] == Phase::loop &&
        std::none_of(p.consumers[i].begin(), p.consumers[i].end(), fusible_node) &&
        std::all_of(n.inputs.begin(), n.inputs.end(),
                    [&](NodeId in) { return g.node(in).op == OpKind::Gather && only_for(in, n.id); })) {
      p.window[i] = 1;
      for (NodeId in : n.inputs) p.in_window[static_cast<size_t>(in)] = 1;
    }
    if (n.op == OpKind::GatherGradOut && p.phase[i] == Phase::loop) {
      const Node& s = g.node(n.inputs[0]);
      if (s.op == OpKind::Slice && only_for(s.id, n.id) && !fusible_node(s.inputs[0])) {
        p.window[i] = 1;
        p.in_window[static_cast<size_t>(s.id)] = 1;
      }
    }
  }
}

// Task-local values (GraphPlan::task_local). `df`: when planning F, ∂F
// (what it reads must outlive the loop); `kept`: values read across tasks
// or after the loop (F's scatter source, push source and pull). A
// gather_reduce's value and a gather_reduce gradient's input are kept
// whole: they are indexed by absolute row.
void plan_task_local(GraphPlan& p, const ir::Graph* df, std::initializer_list<NodeId> kept) {
  const ir::Graph& g = *p.graph;
  std::vector<uint8_t> keep(g.size(), 0);
  if (df)
    for (const Node& n : df->nodes())
      if (n.op == OpKind::ForwardValue) keep[static_cast<size_t>(n.attrs.ref)] = 1;
  for (NodeId id : kept)
    if (id != ir::kNoNode) keep[static_cast<size_t>(id)] = 1;
  // A folded matmul runs at its parameter gradient output, in that node's phase.
  const auto in_loop = [&](NodeId c) {
    const auto k = static_cast<size_t>(c);
    if (p.phase[k] != Phase::loop || g.node(c).op == OpKind::GatherReduceGradOut) return false;
    return !p.folded[k] || std::all_of(p.consumers[k].begin(), p.consumers[k].end(),
                                       [&](NodeId u) { return p.phase[static_cast<size_t>(u)] == Phase::loop; });
  };
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<size_t>(n.id);
    p.task_local[i] = p.home[i] == Home::arena && p.phase[i] == Phase::loop && !keep[i] &&
                      n.op != OpKind::GatherReduce &&
                      std::all_of(p.consumers[i].begin(), p.consumers[i].end(), in_loop);
  }
}

// Group k's FusedProgram, its external inputs and written-out members.
void build_group(FusedGroup& f, const ir::Graph& g, const std::vector<int32_t>& group, int32_t k,
                 const std::vector<uint8_t>& read_outside) {
  std::vector<int32_t> step_of(g.size(), -1);
  for (NodeId m : f.members) {
    const Node& n = g.node(m);
    ir::FusedStep st;
    st.op = n.op;
    st.cols = n.type.cols();
    st.begin = n.attrs.begin;
    st.alpha = n.attrs.alpha;
    for (size_t a = 0; a < n.inputs.size(); ++a) {
      const NodeId in = n.inputs[a];
      if (group[static_cast<size_t>(in)] == k) {
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

// Fusion: row-local nodes of the task loop, linked directly, run as one
// group. `df`: when planning F, ∂F (a member it reads is written out).
void plan_fusion(GraphPlan& p, const PlanOptions& o, const ir::Graph* df, bool push_reads_message = false) {
  const ir::Graph& g = *p.graph;
  std::vector<int32_t> group(g.size(), -1);
  if (o.fusion) {
    std::vector<bool> fusible(g.size(), false);
    for (const Node& n : g.nodes()) {
      const auto i = static_cast<size_t>(n.id);
      fusible[i] = p.home[i] == Home::arena && p.phase[i] == Phase::loop && ir::fusible(n.op) && !p.folded[i] &&
                   !p.window[i] && !p.in_window[i];
    }
    group = passes::fusion_groups(g, fusible);
  }
  p.order = passes::unit_order(g, group);
  p.fused.assign(static_cast<size_t>(*std::max_element(group.begin(), group.end()) + 1), {});
  std::vector<uint8_t> read_outside(g.size(), 0);
  for (const Node& n : g.nodes()) {
    if (n.op == OpKind::Push && push_reads_message) continue;  // it reads the message's columns
    for (NodeId in : n.inputs)
      if (group[static_cast<size_t>(in)] < 0 || group[static_cast<size_t>(in)] != group[static_cast<size_t>(n.id)])
        read_outside[static_cast<size_t>(in)] = 1;
  }
  if (df)
    for (const Node& n : df->nodes())
      if (n.op == OpKind::ForwardValue) read_outside[static_cast<size_t>(n.attrs.ref)] = 1;
  for (const Node& n : g.nodes())
    if (const int32_t gr = group[static_cast<size_t>(n.id)]; gr >= 0)
      p.fused[static_cast<size_t>(gr)].members.push_back(n.id);
  for (size_t k = 0; k < p.fused.size(); ++k)
    build_group(p.fused[k], g, group, static_cast<int32_t>(k), read_outside);
}

// The column where `push` begins in the message F scatters, if it is one of
// the message concat's inputs and ∂F does not read it; else -1.
int64_t pushed_column(const ir::Graph& f, const ir::Graph& df, NodeId scatter, NodeId push) {
  if (scatter == ir::kNoNode || push == ir::kNoNode || push == scatter) return -1;
  for (const Node& n : df.nodes())
    if (n.op == OpKind::ForwardValue && n.attrs.ref == push) return -1;
  const Node& message = f.node(scatter);
  if (message.op != OpKind::Concat) return -1;
  int64_t col = 0;
  for (NodeId in : message.inputs) {
    if (in == push) return col;
    col += f.node(in).type.cols();
  }
  return -1;
}

// F: a row-window concat of gather(0) .. gather(S-1) in slot order, each a
// message wide. ∂F: one value whose slices [k·h, (k+1)·h) are the row-window
// gather gradients of slot k, for every slot once. A concat without such a
// gradient comes back alone (grad kNoNode): it is not read in place, but it
// is not a lent arena's lender either (lent_arenas.cc).
VertexPlan::ChildrenBlock children_block_of(const VertexPlan& vp) {
  const int64_t S = vp.gather_slots;
  if (vp.gathers_all || S < 1 || vp.scatter_source == ir::kNoNode) return {};
  const GraphPlan& f = vp.forward;
  const int64_t h = f.graph->node(vp.scatter_source).type.cols();
  NodeId concat = ir::kNoNode;
  for (const Node& n : f.graph->nodes()) {
    if (!f.window[static_cast<size_t>(n.id)] || n.op != OpKind::Concat || static_cast<int64_t>(n.inputs.size()) != S)
      continue;
    bool ok = true;
    for (int64_t k = 0; k < S; ++k) {
      const Node& g = f.graph->node(n.inputs[static_cast<size_t>(k)]);
      ok = ok && g.op == OpKind::Gather && g.attrs.slot == k && g.type.cols() == h;
    }
    if (ok) {
      concat = n.id;
      break;
    }
  }
  if (concat == ir::kNoNode) return {};
  const GraphPlan& b = vp.backward;
  NodeId source = ir::kNoNode;
  std::vector<int> seen(static_cast<size_t>(S), 0);
  for (const Node& n : b.graph->nodes()) {
    if (n.op != OpKind::GatherGradOut || !b.runs(n.id)) continue;
    const Node& slice = b.graph->node(n.inputs[0]);
    const int64_t k = n.attrs.slot;
    if (!b.window[static_cast<size_t>(n.id)] || slice.op != OpKind::Slice || k < 0 || k >= S ||
        slice.attrs.begin != k * h || slice.type.cols() != h || (source != ir::kNoNode && slice.inputs[0] != source))
      return {concat, ir::kNoNode};
    source = slice.inputs[0];
    ++seen[static_cast<size_t>(k)];
  }
  for (int c : seen)
    if (c != 1) return {concat, ir::kNoNode};
  if (source == ir::kNoNode || b.home[static_cast<size_t>(source)] != Home::arena ||
      b.graph->node(source).type.cols() != S * h)
    return {concat, ir::kNoNode};
  return {concat, source};
}

}  // namespace

bool GraphPlan::runs(NodeId id) const {
  const Home h = home[static_cast<size_t>(id)];
  return h == Home::arena || h == Home::fixed || h == Home::none;
}

std::vector<int> PlanOptions::key() const {
  std::vector<int> k{eager_batching, lazy_param_grads, fusion, push_from_message, ios.has_value()};
  if (ios) k.insert(k.end(), {static_cast<int>(ios->variant), ios->r, ios->s});
  return k;
}

std::shared_ptr<const VertexPlan> build_vertex_plan(std::shared_ptr<const ir::Graph> f, const PlanOptions& options) {
  SYLVA_CHECK(f != nullptr, "[plan] no vertex function given (null graph)");
  validate(*f);
  auto plan = std::make_shared<VertexPlan>();
  plan->options = options;
  if (options.ios) f = std::make_shared<const ir::Graph>(ios::plan_graph(*f, *options.ios).graph);
  std::shared_ptr<const ir::Graph> df = passes::differentiate_vertex_function(*f);
  if (options.ios)
    df = std::make_shared<const ir::Graph>(ios::plan_graph(*df, *options.ios, /*slice_param_grads=*/true).graph);
  plan->forward = start_plan(f);
  plan->backward = start_plan(df);
  const std::vector<bool> folded = passes::foldable_param_matmuls(*df);
  for (size_t i = 0; i < folded.size(); ++i) plan->backward.folded[i] = folded[i];
  if (auto scatters = f->find(OpKind::Scatter); !scatters.empty())
    plan->scatter_source = f->node(scatters[0]).inputs[0];
  const std::vector<NodeId> pushes = f->find(OpKind::Push);
  SYLVA_CHECK(!pushes.empty(), "[vertex_function] '", f->name(), "' pushes no output row (call push())");
  plan->push_source = f->node(pushes[0]).inputs[0];
  if (auto pulls = f->find(OpKind::Pull); !pulls.empty()) plan->pull = pulls[0];
  for (NodeId id : f->find(OpKind::Gather)) plan->gather_slots = std::max(plan->gather_slots, f->node(id).attrs.slot + 1);
  plan->gathers_all = !f->find(OpKind::GatherReduce).empty();
  if (options.push_from_message) plan->push_col = pushed_column(*f, *df, plan->scatter_source, plan->push_source);
  const bool push_reads_message = plan->push_col >= 0;
  plan_phases(plan->forward, options, false);
  plan_windows(plan->forward, df.get());
  plan_fusion(plan->forward, options, df.get(), push_reads_message);
  plan_task_local(plan->forward, df.get(),
                  {plan->scatter_source, push_reads_message ? ir::kNoNode : plan->push_source, plan->pull});
  plan_phases(plan->backward, options, true);
  plan_windows(plan->backward, nullptr);
  plan_fusion(plan->backward, options, nullptr);
  plan_task_local(plan->backward, nullptr, {});
  for (const Node& n : df->nodes())
    if (n.op == OpKind::GatherGradOut && plan->backward.runs(n.id)) plan->gather_grad_slots.push_back(n.attrs.slot);
  plan->children_block = children_block_of(*plan);
  return plan;
}

std::shared_ptr<const VertexPlan> PlanCache::get(const std::shared_ptr<const ir::Graph>& f,
                                                 const PlanOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(f.get(), options.key());
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  auto plan = build_vertex_plan(f, options);
  keep_.push_back(f);
  return plans_.emplace(std::move(key), std::move(plan)).first->second;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

}  // namespace sylva::plan
