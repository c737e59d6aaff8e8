#include "sylva/sched/ios_ir.h"

#include <algorithm>
#include <set>

#include "sylva/core/error.h"

namespace sylva::ios {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

namespace {

bool is_source(const Node& n) { return ir::has(ir::op_def(n.op).flags, ir::OpFlag::source); }
// The operators the DP schedules: the GEMMs, and in a program's static graph
// the applies of vertex functions. Every other node runs as soon as an
// operator (or the graph's end) needs it.
bool scheduled(const Node& n) { return n.op == OpKind::MatMul || n.op == OpKind::Apply || n.op == OpKind::ApplyGrad; }

// Time of a GEMM call on one core: an overhead, then 2mkn flops at a rate
// that reaches the peak only for wide outputs (measured on this project's
// CPUs: Eigen runs [64, 150] x [150, 150] near 60% of its 512-column rate).
constexpr double kPeakFlops = 80e9, kHalfRateCols = 64, kGemmOverhead = 2e-6;
// Any other op: a call overhead and a pass over its output.
constexpr double kOpOverhead = 0.5e-6, kSecondsPerElement = 0.5e-9;
// An apply of a vertex function (or its gradient): a stand-in, its cost is the whole batch's.
constexpr double kApplyTime = 1e-3;

std::vector<NodeId> members(const IrPart& part, OpSet ops) {
  std::vector<NodeId> out;
  for (int v : part.dag.topo_order())
    if (ops >> v & 1) out.push_back(part.nodes[static_cast<size_t>(v)]);
  return out;
}

// When the right operands of matmuls `ms` are the consecutive column slices
// of one value, covering it (a cell written gate by gate over slices of a
// stacked weight): that value, whose concatenation they are. kNoNode otherwise.
NodeId sliced_whole(const ir::Graph& g, const std::vector<NodeId>& ms) {
  NodeId whole = ir::kNoNode;
  int64_t next = 0;
  for (NodeId id : ms) {
    const Node& w = g.node(g.node(id).inputs[1]);
    if (w.op != OpKind::Slice || w.attrs.begin != next || (whole != ir::kNoNode && w.inputs[0] != whole))
      return ir::kNoNode;
    whole = w.inputs[0];
    next = w.attrs.end;
  }
  return next == g.node(whole).type.cols() ? whole : ir::kNoNode;
}

}  // namespace

std::vector<IrPart> ir_parts(const ir::Graph& g, int max_ops) {
  SYLVA_CHECK(max_ops >= 1 && max_ops <= 64, "[ios] parts hold 1 to 64 operators, got ", max_ops);
  std::vector<NodeId> ops;
  for (const Node& n : g.nodes())
    if (scheduled(n)) ops.push_back(n.id);
  std::vector<IrPart> parts;
  for (size_t first = 0; first < ops.size(); first += static_cast<size_t>(max_ops)) {
    const size_t end = std::min(ops.size(), first + static_cast<size_t>(max_ops));
    std::vector<NodeId> nodes(ops.begin() + static_cast<std::ptrdiff_t>(first),
                              ops.begin() + static_cast<std::ptrdiff_t>(end));
    // The part's operators each node depends on, through any nodes between.
    std::vector<OpSet> before(g.size(), 0);
    std::vector<int> local(g.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i) local[static_cast<size_t>(nodes[i])] = static_cast<int>(i);
    std::vector<std::pair<int, int>> edges;
    for (const Node& n : g.nodes()) {
      OpSet& b = before[static_cast<size_t>(n.id)];
      for (NodeId in : n.inputs) {
        b |= before[static_cast<size_t>(in)];
        if (local[static_cast<size_t>(in)] >= 0) b |= OpSet{1} << local[static_cast<size_t>(in)];
      }
      if (const int v = local[static_cast<size_t>(n.id)]; v >= 0)
        for (int u = 0; u < v; ++u)
          if (b >> u & 1) edges.emplace_back(u, v);
    }
    OpDag dag(static_cast<int>(nodes.size()), edges);
    parts.push_back({std::move(nodes), std::move(dag)});
  }
  return parts;
}

bool matmuls_mergeable(const ir::Graph& g, const std::vector<NodeId>& nodes) {
  if (nodes.size() < 2) return false;
  const Node& first = g.node(nodes[0]);
  for (NodeId id : nodes) {
    const Node& n = g.node(id);
    if (n.op != OpKind::MatMul || n.attrs.trans_a || n.attrs.trans_b || n.inputs[0] != first.inputs[0] ||
        g.node(n.inputs[1]).type.rowed)
      return false;
  }
  return true;
}

double IrCostModel::matmul_time(int64_t m, int64_t k, int64_t n) const {
  const double cols = static_cast<double>(n);
  return kGemmOverhead + 2.0 * static_cast<double>(m * k) * cols / (kPeakFlops * cols / (cols + kHalfRateCols));
}

double IrCostModel::op_time(NodeId id) const {
  const Node& n = g_.node(id);
  const auto rows_of = [&](const ir::ValueType& t) { return t.rowed ? rows_ : t.fixed_rows(); };
  if (n.op == OpKind::Apply || n.op == OpKind::ApplyGrad) return kApplyTime;
  if (n.op == OpKind::MatMul) {
    const ir::ValueType &a = g_.node(n.inputs[0]).type, &b = g_.node(n.inputs[1]).type;
    const int64_t m = n.attrs.trans_a ? a.cols() : rows_of(a), k = n.attrs.trans_a ? rows_of(a) : a.cols();
    return matmul_time(m, k, n.attrs.trans_b ? rows_of(b) : b.cols());
  }
  return kOpOverhead + kSecondsPerElement * static_cast<double>(rows_of(n.type) * n.type.cols());
}

double IrCostModel::latency(const OpDag&, const Stage& stage) {
  double t = 0;
  if (stage.kind == Stage::Kind::merged) {
    const std::vector<NodeId> ms = members(part_, stage.groups[0]);
    const ir::ValueType& a = g_.node(g_.node(ms[0]).inputs[0]).type;
    int64_t cols = 0;
    for (NodeId id : ms) {
      cols += g_.node(id).type.cols();
      t += kOpOverhead;  // its slice
    }
    return t + matmul_time(a.rowed ? rows_ : a.fixed_rows(), a.cols(), cols);
  }
  for (OpSet grp : stage.groups)
    for (NodeId id : members(part_, grp)) t += op_time(id);
  return t;
}

bool IrCostModel::mergeable(const OpDag&, OpSet ops) { return matmuls_mergeable(g_, members(part_, ops)); }

ir::Graph follow_plans(const ir::Graph& g, const std::vector<IrPart>& parts, const std::vector<StagePlan>& plans,
                       bool slice_param_grads, std::vector<ir::NodeId>* emitted_as) {
  SYLVA_CHECK(parts.size() == plans.size(), "[ios] ", parts.size(), " parts but ", plans.size(), " plans");
  ir::Graph out(g.name(), g.kind(), g.dtype());
  std::vector<NodeId> local_map;
  std::vector<NodeId>& map = emitted_as ? *emitted_as : local_map;
  map.assign(g.size(), ir::kNoNode);
  std::vector<uint8_t> done(g.size(), 0);
  // Row-reducing matmuls (Aᵀ·B, a fixed result) read only by slices: each slice becomes Aᵀ·Slice(B).
  std::vector<uint8_t> through(g.size(), 0);
  if (slice_param_grads) {
    std::vector<int> readers(g.size(), 0), slices(g.size(), 0);
    for (const Node& n : g.nodes())
      for (NodeId in : n.inputs) {
        ++readers[static_cast<size_t>(in)];
        slices[static_cast<size_t>(in)] += n.op == OpKind::Slice;
      }
    for (const Node& n : g.nodes())
      through[static_cast<size_t>(n.id)] = n.op == OpKind::MatMul && n.attrs.trans_a && !n.attrs.trans_b &&
                                           !n.type.rowed && readers[static_cast<size_t>(n.id)] > 0 &&
                                           readers[static_cast<size_t>(n.id)] == slices[static_cast<size_t>(n.id)];
  }
  // Emits node `id` after whatever it reads that is not emitted yet.
  const auto emit = [&](NodeId id, const auto& self) -> void {
    const auto i = static_cast<size_t>(id);
    if (done[i]) return;
    done[i] = 1;
    const Node& n = g.node(id);
    for (NodeId in : n.inputs) self(in, self);
    if (through[i]) return;  // its slices compute it, column range by column range
    if (n.op == OpKind::Slice && through[static_cast<size_t>(n.inputs[0])]) {
      const Node& m = g.node(n.inputs[0]);
      for (NodeId in : m.inputs) self(in, self);
      const NodeId b = out.add(OpKind::Slice, {map[static_cast<size_t>(m.inputs[1])]}, n.attrs);
      map[i] = out.add(OpKind::MatMul, {map[static_cast<size_t>(m.inputs[0])], b}, m.attrs);
      return;
    }
    std::vector<NodeId> ins;
    for (NodeId in : n.inputs) ins.push_back(map[static_cast<size_t>(in)]);
    ir::Attrs attrs = n.attrs;
    if (n.op == OpKind::DropoutMask && attrs.ref == ir::kNoNode) attrs.ref = n.id;  // its random stream's key
    map[i] = out.add(n.op, std::move(ins), std::move(attrs));
  };
  for (const Node& n : g.nodes())
    if (is_source(n)) emit(n.id, emit);
  for (size_t p = 0; p < parts.size(); ++p) {
    SYLVA_CHECK(valid_plan(parts[p].dag, plans[p]), "[ios] the plan of part ", p, " of '", g.name(),
                "' does not run every operator once after its inputs");
    for (const Stage& st : plans[p].stages) {
      if (st.kind == Stage::Kind::concurrent) {
        for (OpSet grp : st.groups)
          for (NodeId id : members(parts[p], grp)) emit(id, emit);
        continue;
      }
      const std::vector<NodeId> ms = members(parts[p], st.groups[0]);
      SYLVA_CHECK(matmuls_mergeable(g, ms), "[ios] a merged stage of '", g.name(), "' holds operators that do "
                  "not merge (matmuls sharing their left operand, fixed right operands)");
      std::vector<NodeId> weights;
      for (NodeId id : ms) {
        for (NodeId in : g.node(id).inputs) emit(in, emit);
        weights.push_back(map[static_cast<size_t>(g.node(id).inputs[1])]);
      }
      const NodeId whole = sliced_whole(g, ms);  // the weights are the column slices of one value, in order
      if (whole != ir::kNoNode) emit(whole, emit);
      const NodeId cat =
          whole != ir::kNoNode ? map[static_cast<size_t>(whole)] : out.add(OpKind::Concat, std::move(weights));
      const NodeId mm = out.add(OpKind::MatMul, {map[static_cast<size_t>(g.node(ms[0]).inputs[0])], cat});
      ir::Attrs cols;
      for (NodeId id : ms) {
        cols.end = cols.begin + g.node(id).type.cols();
        map[static_cast<size_t>(id)] = out.add(OpKind::Slice, {mm}, cols);
        done[static_cast<size_t>(id)] = 1;
        cols.begin = cols.end;
      }
    }
  }
  for (const Node& n : g.nodes()) emit(n.id, emit);  // what no operator needs (the graph's outputs)
  return out;
}

namespace {

std::vector<StagePlan> plan_parts(const ir::Graph& g, const std::vector<IrPart>& parts, const Options& options,
                                  int64_t rows, PlannedGraph& out) {
  std::vector<StagePlan> plans;
  for (const IrPart& part : parts) {
    IrCostModel cost(g, part, rows);
    plans.push_back(schedule(part.dag, cost, options));
    for (const Stage& st : plans.back().stages) {
      out.merged_stages += st.kind == Stage::Kind::merged;
      out.concurrent_stages += st.kind == Stage::Kind::concurrent && st.groups.size() > 1;
    }
    out.states += plans.back().states;
    out.stages_costed += plans.back().stages_costed;
  }
  return plans;
}

}  // namespace

PlannedGraph plan_graph(const ir::Graph& g, const Options& options, bool slice_param_grads, int64_t rows) {
  const std::vector<IrPart> parts = ir_parts(g);
  PlannedGraph out{ir::Graph(g.name(), g.kind(), g.dtype())};
  const std::vector<StagePlan> plans = plan_parts(g, parts, options, rows, out);
  out.graph = follow_plans(g, parts, plans, slice_param_grads);
  return out;
}

std::vector<NodeId> plan_order(const ir::Graph& g, Options options, int64_t rows) {
  if (options.variant == Variant::merge) options.variant = Variant::sequential;
  if (options.variant == Variant::both) options.variant = Variant::parallel;
  const std::vector<IrPart> parts = ir_parts(g);
  PlannedGraph stats{ir::Graph(g.name(), g.kind(), g.dtype())};
  const std::vector<StagePlan> plans = plan_parts(g, parts, options, rows, stats);
  std::vector<NodeId> emitted_as;
  follow_plans(g, parts, plans, false, &emitted_as);
  std::vector<NodeId> order(g.size(), ir::kNoNode);
  for (size_t id = 0; id < g.size(); ++id) order[static_cast<size_t>(emitted_as[id])] = static_cast<NodeId>(id);
  return order;
}

}  // namespace sylva::ios
