#include "vertex_runner.h"

#include <algorithm>
#include <cstring>

#include "sylva/core/error.h"
#include "sylva/core/log.h"
#include "sylva/passes/autodiff.h"
#include "sylva/sched/ios_ir.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using ir::OpKind;

MatView& Slot::shape(int64_t rows, int64_t cols, DType dtype) {
  buf.reserve(static_cast<size_t>(std::max<int64_t>(rows * cols, 1)) * dtype_size(dtype));
  view = {buf.data(), rows, cols, dtype};
  return view;
}

namespace {
// The whole [rows, cols] matrix that a task window of an arena belongs to.
MatView rebase(MatView window, const Task& t, int64_t rows) {
  return {static_cast<char*>(window.data) - t.offset * window.cols * static_cast<int64_t>(dtype_size(window.dtype)),
          rows, window.cols, window.dtype};
}
// Whether node n of F or ∂F is zero at every row given which of its
// inputs are (zero[]): products with a zero factor, sums of zeros,
// slices/concats of zeros, and ops that map 0 to 0 (tanh, relu, scale,
// reductions; gradient ops are zero when the incoming gradient is).
bool zero_from_inputs(const Node& n, const std::vector<uint8_t>& zero) {
  const auto z = [&](size_t k) { return k < n.inputs.size() && zero[static_cast<size_t>(n.inputs[k])] != 0; };
  const auto all = [&] {
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!z(k)) return false;
    return !n.inputs.empty();
  };
  switch (n.op) {
    case OpKind::MatMul: case OpKind::Mul: return z(0) || z(1);
    case OpKind::Add: case OpKind::Sub: case OpKind::Concat: case OpKind::Assemble: return all();
    case OpKind::Slice: case OpKind::Tanh: case OpKind::Relu: case OpKind::Scale: case OpKind::SumRows:
    case OpKind::Sum: case OpKind::Broadcast: return z(0);
    case OpKind::TanhGrad: case OpKind::SigmoidGrad: case OpKind::ReluGrad: case OpKind::SoftmaxGrad:
    case OpKind::LogSoftmaxGrad: return z(1);
    default: return false;
  }
}

// Queues the backend calls made while it lives on lane `lane`.
class OnLane {
 public:
  OnLane(Backend& b, int lane) : b_(b), previous_(b.set_lane(lane)) {}
  ~OnLane() {
    try {
      b_.set_lane(previous_);
    } catch (...) {  // a lane it came from exists
    }
  }
  OnLane(const OnLane&) = delete;
  OnLane& operator=(const OnLane&) = delete;

 private:
  Backend& b_;
  int previous_;
};

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
}  // namespace

std::vector<Slot> make_slots(size_t n, Memory& memory) {
  std::vector<Slot> slots;
  slots.reserve(n);
  for (size_t i = 0; i < n; ++i) slots.emplace_back(memory);
  return slots;
}

bool VertexRunner::pulled_zero(const MatView& block, size_t ti) const {
  if (backend_.memory().host_visible()) return all_zero_bytes(block);
  return (task_bits_[ti] & kPullGradUnused) != 0;  // every row looked up id -1
}

VertexRunner::VertexRunner(std::shared_ptr<const ir::Graph> f, Backend& backend, ParamStore& params,
                           std::optional<ios::Options> ios)
    : ios_(ios),
      f_(ios ? std::make_shared<const ir::Graph>(ios::plan_graph(*f, *ios).graph) : std::move(f)),
      backend_(backend),
      params_(params) {
  const ir::Graph& g = *f_;
  auto scatters = g.find(OpKind::Scatter);
  if (!scatters.empty()) {
    scatter_src_ = g.node(scatters[0]).inputs[0];
    scatter_grad_ = DynamicTensor(g.node(scatter_src_).type.shape, g.dtype(), backend_.memory());
  }
  SYLVA_CHECK(!scatters.empty() || (g.find(OpKind::Gather).empty() && g.find(OpKind::GatherReduce).empty()),
              "[vertex_function] '", g.name(), "' gathers children's messages but never scatters one");
  // F must be per-vertex: a fixed-size value computed from per-vertex values
  // (a reduction over rows) would depend on how vertices are batched.
  std::vector<bool> per_vertex(g.size(), false);
  for (const Node& n : g.nodes()) {
    bool dep = n.type.rowed;
    for (NodeId in : n.inputs) dep = dep || per_vertex[in];
    per_vertex[n.id] = dep;
    SYLVA_CHECK(n.type.rowed || !dep, "[vertex_function] '", g.name(), "' node ", n.id, " (",
                ir::op_name(n.op), ") reduces per-vertex values to ", n.type.str(),
                "; F must compute each vertex independently (reduce in the program instead)");
    SYLVA_CHECK(n.op != OpKind::InputIds, "[vertex_function] input_ids is not available inside F");
    if (n.op != OpKind::Param && n.op != OpKind::Push && n.op != OpKind::Scatter &&
        !ir::has(ir::op_def(n.op).flags, ir::OpFlag::boundary))
      SYLVA_CHECK(backend_.supports(n.op), "[", backend_.name(), "] no kernel for op '", ir::op_name(n.op),
                  "' used by vertex function '", g.name(), "'");
  }
  for (const Node& n : g.nodes())
    if (n.op == OpKind::Param) params_.value(n.attrs.name);  // throws early if missing
  init_values(fwd_, g);
}

const ir::Graph& VertexRunner::grad_graph() {
  if (!df_) {
    df_ = passes::differentiate_vertex_function(*f_);
    if (ios_) df_ = std::make_shared<const ir::Graph>(ios::plan_graph(*df_, *ios_, /*slice_param_grads=*/true).graph);
    init_values(bwd_, *df_);
    folded_ = passes::foldable_param_matmuls(*df_);
    consumers_b_.assign(df_->size(), {});
    for (const Node& n : df_->nodes())
      for (NodeId in : n.inputs) consumers_b_[static_cast<size_t>(in)].push_back(n.id);
    phases_dirty_ = true;
  }
  return *df_;
}

void VertexRunner::init_values(Values& v, const ir::Graph& g) {
  v.graph = &g;
  v.home.assign(g.size(), Home::none);
  v.arena.clear();
  v.arena.resize(g.size());
  v.fixed = make_slots(g.size(), backend_.memory());
  for (const Node& n : g.nodes()) {
    Home h = n.type.rowed ? Home::arena : Home::fixed;
    switch (n.op) {
      case OpKind::Param: h = Home::param; break;
      case OpKind::ForwardValue: h = Home::forward; break;
      case OpKind::ScatterGradIn: h = Home::scatter_grad; break;
      case OpKind::Scatter: case OpKind::Push: case OpKind::GatherGradOut: case OpKind::GatherReduceGradOut:
      case OpKind::PullGradOut: case OpKind::ParamGradOut:
        h = Home::none;
        break;
      default: break;
    }
    v.home[n.id] = h;
    if (h == Home::arena) v.arena[n.id] = DynamicTensor(n.type.shape, n.type.dtype, backend_.memory());
  }
  v.phase.assign(g.size(), Phase::loop);
  v.pre.clear();
  v.post.clear();
}

void VertexRunner::run_unit(Values& v, int32_t unit, const Task& t, int64_t task_index, const ExecContext& ctx,
                            const Observer* obs) {
  if (unit >= 0) {
    run_node(v, v.graph->node(unit), t, task_index, ctx, obs);
    return;
  }
  Values::Fused& f = v.fused[static_cast<size_t>(-1 - unit)];
  if (!f.failed) {
    run_group(v, static_cast<size_t>(-1 - unit), t, task_index, obs);
    if (!f.failed) return;
  }
  for (NodeId m : f.members) run_node(v, v.graph->node(m), t, task_index, ctx, obs);
}

// A fused group computes every member, zero ones included (their inputs are
// zeros, so they come out zero) and unneeded ones in ∂F (nobody reads them).
void VertexRunner::run_group(Values& v, size_t group, const Task& t, int64_t task_index, const Observer* obs) {
  Values::Fused& f = v.fused[group];
  if (skip_ && &v == &fwd_)
    for (NodeId m : f.members)
      main_.zero_f[static_cast<size_t>(m)] = zero_from_inputs(v.graph->node(m), main_.zero_f);
  auto start = obs ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  main_.in.clear();
  for (NodeId in : f.inputs) main_.in.push_back(view(v, in, t));
  main_.out.clear();
  for (NodeId out : f.outputs) main_.out.push_back(view(v, out, t));
  if (!backend_.run_fused(f.program, main_.in, main_.out, t.bs)) {
    f.failed = true;
    log(LogLevel::warning, "[" + backend_.name() + "] no fused kernel for " + f.program.name + " in '" +
                               v.graph->name() + "'; running its ops one by one");
    return;
  }
  if (obs && *obs)
    (*obs)({v.graph->node(f.members.back()), *v.graph, task_index, t.bs, std::chrono::steady_clock::now() - start,
            f.members});
}

void VertexRunner::prepare(const GraphBatch& batch, const Schedule& schedule, std::span<const int32_t> pull_ids) {
  batch_ = &batch;
  schedule_ = &schedule;
  const ir::Graph& g = *f_;
  const int64_t rows = schedule.num_rows();
  const int64_t max_read = g.max_children_read();
  if (max_read >= 0 && batch.max_arity() > max_read) {
    for (int32_t v = 0; v < batch.num_vertices(); ++v)
      SYLVA_CHECK(static_cast<int64_t>(batch.children(v).size()) <= max_read, "[apply] ", batch.describe_vertex(v),
                  " has ", batch.children(v).size(), " children but vertex function '", g.name(), "' reads at most ",
                  max_read, " (gather slots 0..", max_read - 1, "); use gather_reduce() for any arity");
  }
  // Gather tables in row order: one contiguous span per task.
  // F may use gather(i) and gather_reduce() together: tables for both.
  int64_t slots = 0;
  for (NodeId id : g.find(OpKind::Gather)) slots = std::max(slots, g.node(id).attrs.slot + 1);
  child_rows_.assign(static_cast<size_t>(slots), {});
  for (int64_t slot = 0; slot < static_cast<int64_t>(child_rows_.size()); ++slot) {
    auto& t = child_rows_[slot];
    t.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      auto ch = batch.children(schedule.vertex_of_row[r]);
      t[r] = slot < static_cast<int64_t>(ch.size()) && ch[slot] >= 0 ? schedule.row_of_vertex[ch[slot]] : -1;
    }
  }
  if (!g.find(OpKind::GatherReduce).empty()) {
    reduce_offsets_.assign(static_cast<size_t>(rows) + 1, 0);
    reduce_src_.clear();
    reduce_dst_.clear();
    for (int64_t r = 0; r < rows; ++r) {
      for (int32_t c : batch.children(schedule.vertex_of_row[r]))
        if (c >= 0) {
          reduce_src_.push_back(schedule.row_of_vertex[c]);
          reduce_dst_.push_back(static_cast<int32_t>(r));
        }
      reduce_offsets_[r + 1] = static_cast<int32_t>(reduce_src_.size());
    }
  }
  // What is absent at every row of each task (see skip_zero_work).
  task_bits_.assign(schedule.tasks.size(), 0);
  task_pull_zero_.assign(schedule.tasks.size(), 0);
  for (size_t ti = 0; ti < schedule.tasks.size(); ++ti) {
    const Task& t = schedule.tasks[ti];
    uint64_t bits = 0;
    for (int64_t slot = 0; slot < std::min<int64_t>(slots, 62); ++slot) {
      const int32_t* c = child_rows_[static_cast<size_t>(slot)].data() + t.offset;
      if (std::all_of(c, c + t.bs, [](int32_t r) { return r < 0; })) bits |= 1ull << slot;
    }
    if (!reduce_offsets_.empty() && reduce_offsets_[t.offset] == reduce_offsets_[t.offset + t.bs]) bits |= kNoChildren;
    if (!pull_ids.empty()) {
      const int32_t* v = schedule.vertex_of_row.data() + t.offset;
      if (std::all_of(v, v + t.bs, [&](int32_t x) { return pull_ids[static_cast<size_t>(x)] < 0; }))
        bits |= kPullGradUnused;
    }
    task_bits_[ti] = bits;
  }
  minus_ones_.assign(static_cast<size_t>(rows), -1);
  ensure_phases();
  main_.zero_f.assign(g.size(), 0);
  for (size_t i = 0; i < fwd_.arena.size(); ++i)
    if (fwd_.home[i] == Home::arena) fwd_.arena[i].reserve_rows(rows);
  for (size_t i = 0; i < bwd_.arena.size(); ++i)
    if (bwd_.home[i] == Home::arena) bwd_.arena[i].reserve_rows(rows);
  if (scatter_src_ != ir::kNoNode && df_) scatter_grad_.reserve_rows(rows);
}

MatView VertexRunner::view(Values& v, NodeId id, const Task& t) {
  const Node& n = v.graph->node(id);
  switch (v.home[id]) {
    case Home::arena: {
      DynamicTensor& a = v.arena[id];
      return {a.row(t.offset), t.bs, a.cols(), a.dtype()};
    }
    case Home::fixed: return v.fixed[id].view;
    case Home::param: return params_.value(n.attrs.name);
    case Home::forward: return view(fwd_, n.attrs.ref, t);
    case Home::scatter_grad: return {scatter_grad_.row(t.offset), t.bs, scatter_grad_.cols(), scatter_grad_.dtype()};
    case Home::none: break;
  }
  SYLVA_THROW("[vertex_runner] node ", id, " (", ir::op_name(n.op), ") has no value (internal)");
}

// A gather (reduce) whose children are absent at every row of the task.
bool VertexRunner::absent_message(const Node& n, uint64_t bits) {
  if (n.op == OpKind::GatherReduce) return (bits & kNoChildren) != 0;
  return n.attrs.slot < 62 && (bits >> n.attrs.slot & 1u);
}

void VertexRunner::compute_zero(const ir::Graph& g, uint64_t bits, bool pull_zero, const std::vector<uint8_t>& zero_f,
                                std::vector<uint8_t>& zero) const {
  zero.assign(g.size(), 0);
  for (const Node& n : g.nodes()) {
    bool z = false;
    switch (n.op) {
      case OpKind::Gather: case OpKind::GatherReduce: z = absent_message(n, bits); break;
      case OpKind::Pull: z = pull_zero; break;
      case OpKind::ForwardValue: z = zero_f[static_cast<size_t>(n.attrs.ref)] != 0; break;
      default: z = zero_from_inputs(n, zero);
    }
    zero[static_cast<size_t>(n.id)] = z;
  }
}

// ∂F nodes of the current task whose result nobody needs: gradients for
// absent children or unused pull rows, zero parameter gradients, and
// everything that only feeds those.
void VertexRunner::compute_dead(uint64_t bits, Lane& lane) const {
  const ir::Graph& dg = *df_;
  const std::vector<uint8_t>& zero_b = lane.zero_b;
  std::vector<uint8_t>& dead_b = lane.dead_b;
  dead_b.assign(dg.size(), 0);
  for (size_t i = dg.size(); i-- > 0;) {
    const Node& n = dg.node(static_cast<NodeId>(i));
    bool d = false;
    switch (n.op) {
      case OpKind::GatherGradOut:
        d = (n.attrs.slot < 62 && (bits >> n.attrs.slot & 1u)) || zero_b[static_cast<size_t>(n.inputs[0])] != 0;
        break;
      case OpKind::GatherReduceGradOut:
        d = (bits & kNoChildren) != 0 || zero_b[static_cast<size_t>(n.inputs[0])] != 0;
        break;
      case OpKind::PullGradOut: d = (bits & kPullGradUnused) != 0; break;
      case OpKind::ParamGradOut: d = zero_b[static_cast<size_t>(n.inputs[0])] != 0; break;
      default: {
        const auto& cs = consumers_b_[i];
        d = !cs.empty() &&
            std::all_of(cs.begin(), cs.end(), [&](NodeId c) { return dead_b[static_cast<size_t>(c)] != 0; });
      }
    }
    dead_b[i] = d;
  }
}

// Data movement at F's boundary, for the rows of one task.
void VertexRunner::run_boundary(const Node& n, const Task& t, MatView out) {
  const auto rows_of = [&](const std::vector<int32_t>& table) {
    return std::span<const int32_t>(table.data() + t.offset, static_cast<size_t>(t.bs));
  };
  const std::span<const int32_t> vertices = rows_of(schedule_->vertex_of_row);
  MatView whole_scatter;
  if (scatter_src_ != ir::kNoNode && n.op != OpKind::Pull && n.op != OpKind::PushGradIn &&
      n.op != OpKind::PullGradOut) {
    const DynamicTensor& src = (n.op == OpKind::Gather || n.op == OpKind::GatherReduce) ? fwd_.arena[scatter_src_]
                                                                                      : scatter_grad_;
    whole_scatter = {const_cast<void*>(src.row(0)), schedule_->num_rows(), src.cols(), src.dtype()};
  }
  switch (n.op) {
    case OpKind::Pull: backend_.copy_rows(pull_, vertices, out, {}); return;
    case OpKind::PushGradIn: backend_.copy_rows(d_pushed_, vertices, out, {}); return;
    case OpKind::Gather: backend_.copy_rows(whole_scatter, rows_of(child_rows_[n.attrs.slot]), out, {}); return;
    case OpKind::GatherReduce: {
      backend_.fill_zero(out);
      int32_t b = reduce_offsets_[t.offset], e = reduce_offsets_[t.offset + t.bs];
      if (e == b) return;  // an empty index span would mean "all rows"
      backend_.add_rows(whole_scatter, {reduce_src_.data() + b, static_cast<size_t>(e - b)},
                        rebase(out, t, schedule_->num_rows()), {reduce_dst_.data() + b, static_cast<size_t>(e - b)});
      return;
    }
    default: break;
  }
  SYLVA_ASSERT(false, "unexpected boundary op ", ir::op_name(n.op));
}

void VertexRunner::run_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                            const Observer* obs) {
  const Home h = v.home[n.id];
  if (h == Home::param || h == Home::forward || h == Home::scatter_grad) return;
  if (v.phase[n.id] != Phase::loop) return;
  if (&v == &bwd_ && folded_[n.id]) return;  // runs at its ParamGradOut
  const bool fwd = &v == &fwd_;
  if (skip_ && !fwd && main_.dead_b[static_cast<size_t>(n.id)]) {
    skip_unneeded(n, t);
    return;
  }
  if (skip_ && fwd && n.op != OpKind::Pull) {  // the pull's flag is set once its rows are read
    const bool z = n.op == OpKind::Gather || n.op == OpKind::GatherReduce
                       ? absent_message(n, task_bits_[static_cast<size_t>(task_index)])
                       : zero_from_inputs(n, main_.zero_f);
    main_.zero_f[static_cast<size_t>(n.id)] = z;
  }
  if (skip_ && (h == Home::arena || h == Home::fixed) && !ir::has(ir::op_def(n.op).flags, ir::OpFlag::boundary) &&
      (fwd ? main_.zero_f : main_.zero_b)[static_cast<size_t>(n.id)]) {
    backend_.fill_zero(h == Home::arena ? view(v, n.id, t)
                                        : v.fixed[n.id].shape(n.type.shape.rows(), n.type.cols(), n.type.dtype));
    ++skipped_;  // known zero: no kernel
    return;
  }
  exec_node(v, n, t, task_index, ctx, obs, main_);
  if (skip_ && n.op == OpKind::Pull) {
    const bool z = pulled_zero(view(v, n.id, t), static_cast<size_t>(task_index));
    main_.zero_f[static_cast<size_t>(n.id)] = z;
    task_pull_zero_[static_cast<size_t>(task_index)] = z;
  }
}

// An unneeded ∂F node is not computed; unused pull rows get zeros rather
// than stale values.
void VertexRunner::skip_unneeded(const Node& n, const Task& t) {
  if (n.op == OpKind::PullGradOut && d_pull_.data)
    backend_.copy_rows(d_pull_, {minus_ones_.data(), static_cast<size_t>(t.bs)}, d_pull_,
                       {schedule_->vertex_of_row.data() + t.offset, static_cast<size_t>(t.bs)});
  ++skipped_;
}

void VertexRunner::exec_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                             const Observer* obs, Lane& lane) {
  const Home h = v.home[n.id];
  auto start = obs ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const auto window = [&](const std::vector<int32_t>& table) {
    return std::span<const int32_t>(table.data() + t.offset, static_cast<size_t>(t.bs));
  };
  switch (n.op) {
    case OpKind::Scatter: case OpKind::Push: return;  // markers: their input's arena is the value
    case OpKind::Pull: case OpKind::Gather: case OpKind::GatherReduce: case OpKind::PushGradIn:
      run_boundary(n, t, view(v, n.id, t));
      break;
    case OpKind::GatherGradOut: {
      MatView all = {scatter_grad_.row(0), schedule_->num_rows(), scatter_grad_.cols(), scatter_grad_.dtype()};
      backend_.add_rows(view(v, n.inputs[0], t), {}, all, window(child_rows_[n.attrs.slot]));
      break;
    }
    case OpKind::GatherReduceGradOut: {
      MatView all = {scatter_grad_.row(0), schedule_->num_rows(), scatter_grad_.cols(), scatter_grad_.dtype()};
      MatView g_abs = rebase(view(v, n.inputs[0], t), t, schedule_->num_rows());
      int32_t b = reduce_offsets_[t.offset], e = reduce_offsets_[t.offset + t.bs];
      if (e > b)
        backend_.add_rows(g_abs, {reduce_dst_.data() + b, static_cast<size_t>(e - b)}, all,
                        {reduce_src_.data() + b, static_cast<size_t>(e - b)});
      break;
    }
    case OpKind::PullGradOut:
      if (d_pull_.data) backend_.copy_rows(view(v, n.inputs[0], t), {}, d_pull_, window(schedule_->vertex_of_row));
      break;
    case OpKind::ParamGradOut: {
      MatView grad = params_.grad(n.attrs.name);
      if (&v == &bwd_ && folded_[n.inputs[0]]) {
        const Node& mm = v.graph->node(n.inputs[0]);
        lane.in.clear();
        for (NodeId in : mm.inputs) lane.in.push_back(view(v, in, t));
        ExecContext c = ctx;
        backend_.run({mm, lane.in, grad, c, /*accumulate=*/true});
      } else {
        backend_.accumulate(view(v, n.inputs[0], t), grad);
      }
      break;
    }
    default: {
      lane.in.clear();
      for (NodeId in : n.inputs) lane.in.push_back(view(v, in, t));
      MatView out = h == Home::arena ? view(v, n.id, t)
                                     : v.fixed[n.id].shape(n.type.shape.rows(), n.type.cols(), n.type.dtype);
      ExecContext c = ctx;
      c.row_vertex = schedule_->vertex_of_row.data() + t.offset;
      backend_.run({n, lane.in, out, c});
    }
  }
  if (obs && *obs) {
    const OpEvent e{n, *v.graph, task_index, t.bs, std::chrono::steady_clock::now() - start};
    if (lane.buffer_events) lane.events.push_back(e);
    else (*obs)(e);
  }
}

void VertexRunner::task_flags(size_t ti, bool backward, Lane& lane) const {
  compute_zero(*f_, task_bits_[ti], task_pull_zero_[ti] != 0, {}, lane.zero_f);  // F reads no forward values
  if (!backward) return;
  compute_zero(*df_, task_bits_[ti], false, lane.zero_f, lane.zero_b);
  compute_dead(task_bits_[ti], lane);
}

void VertexRunner::run_phase(Values& v, Phase ph, const ExecContext& ctx, const Observer* obs, size_t first,
                             size_t end, Lane& lane) {
  const std::vector<NodeId>& nodes = ph == Phase::pre ? v.pre : v.post;
  if (nodes.empty() || first >= end) return;
  const bool fwd = &v == &fwd_;
  const auto& tasks = schedule_->tasks;
  const size_t T = end - first;
  const Task all{tasks[first].offset, tasks[end - 1].offset + tasks[end - 1].bs - tasks[first].offset};
  const auto batched = static_cast<int64_t>(tasks.size());  // the observer's task index for work outside the loop
  // The pull runs first: which tasks pulled all-zero rows decides what else is zero.
  for (NodeId id : nodes) {
    const Node& n = v.graph->node(id);
    if (n.op != OpKind::Pull) continue;
    exec_node(v, n, all, batched, ctx, obs, lane);
    for (size_t ti = first; ti < end && skip_; ++ti) task_pull_zero_[ti] = pulled_zero(view(v, id, tasks[ti]), ti);
  }
  lane.state.assign(nodes.size() * T, 0);
  for (size_t ti = first; ti < end && skip_; ++ti) {
    task_flags(ti, !fwd, lane);
    const std::vector<uint8_t>& zero = fwd ? lane.zero_f : lane.zero_b;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const auto id = static_cast<size_t>(nodes[k]);
      lane.state[k * T + (ti - first)] = !fwd && lane.dead_b[id] ? 2 : zero[id] ? 1 : 0;
    }
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = v.graph->node(nodes[k]);
    if (n.op == OpKind::Pull) continue;
    if (v.home[n.id] == Home::fixed) {  // a value of parameters only: once, before the first task needs it
      if (first == 0) exec_node(v, n, all, batched, ctx, obs, lane);
      continue;
    }
    const uint8_t* state = lane.state.data() + k * T;
    for (size_t i = 0; i < T;) {
      const uint8_t st = state[i];
      Task span{tasks[first + i].offset, 0};
      int64_t count = 0;
      for (; i < T && state[i] == st; ++i, ++count) span.bs += tasks[first + i].bs;
      if (st == 0 || (st == 1 && v.home[n.id] != Home::arena)) {
        exec_node(v, n, span, batched, ctx, obs, lane);
      } else if (st == 1) {
        backend_.fill_zero(view(v, n.id, span));
        skipped_ += count;
      } else {
        skip_unneeded(n, span);
        skipped_ += count - 1;
      }
    }
  }
}

// Chunks of tasks holding at least a quarter of the rows (and 256 rows), in
// task order; for the backward loop, in the reverse order it runs them.
std::vector<size_t> VertexRunner::chunk_bounds(bool reverse) const {
  const auto& tasks = schedule_->tasks;
  const int64_t target = std::max<int64_t>(256, schedule_->num_rows() / 4);
  std::vector<size_t> b{reverse ? tasks.size() : 0};
  int64_t rows = 0;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const size_t ti = reverse ? tasks.size() - 1 - k : k;
    rows += tasks[ti].bs;
    if (rows >= target || k + 1 == tasks.size()) {
      b.push_back(reverse ? ti : ti + 1);
      rows = 0;
    }
  }
  return b;
}

void VertexRunner::report_worker_events(const Observer* obs) {
  if (obs && *obs)
    for (const OpEvent& e : worker_lane_.events) (*obs)(e);
  worker_lane_.events.clear();
}

void VertexRunner::forward(MatView pull, MatView pushed, const ExecContext& ctx, const Observer* obs) {
  pull_ = pull;
  const auto& tasks = schedule_->tasks;
  const size_t T = tasks.size();
  // Streaming: the work before the loop runs on the worker (a device: is
  // queued on lane 1), chunk by chunk, and each task waits only for its
  // own chunk.
  const bool stream = streaming_ && !fwd_.pre.empty() && T > 1;
  const bool on_lane = stream && !backend_.concurrent_calls();
  std::vector<size_t> bounds;
  std::vector<uint64_t> events;
  if (on_lane) {
    worker_lane_.buffer_events = false;
    bounds = chunk_bounds(false);
    const uint64_t inputs_ready = backend_.record();  // the pull and the parameters, on lane 0
    OnLane side(backend_, 1);
    backend_.wait(inputs_ready);
    for (size_t c = 0; c + 1 < bounds.size(); ++c) {
      run_phase(fwd_, Phase::pre, ctx, obs, bounds[c], bounds[c + 1], worker_lane_);
      events.push_back(backend_.record());
    }
  } else if (stream) {
    if (!worker_) worker_ = std::make_unique<WorkerStream>();
    worker_lane_.buffer_events = true;
    bounds = chunk_bounds(false);
    for (size_t c = 0; c + 1 < bounds.size(); ++c)
      events.push_back(worker_->enqueue([this, ctx, obs, a = bounds[c], b = bounds[c + 1]] {
        run_phase(fwd_, Phase::pre, ctx, obs, a, b, worker_lane_);
      }));
  } else {
    run_phase(fwd_, Phase::pre, ctx, obs, 0, T, main_);
  }
  try {
    size_t chunk = 0;
    for (size_t ti = 0; ti < T; ++ti) {
      if (stream && ti == bounds[chunk]) {
        if (on_lane) backend_.wait(events[chunk++]);
        else worker_->wait(events[chunk++]);
      }
      if (skip_ && !fwd_.pre.empty()) task_flags(ti, false, main_);  // zero flags of the nodes that ran before
      for (int32_t u : fwd_.order) run_unit(fwd_, u, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
    }
  } catch (...) {
    if (stream && !on_lane) worker_->drain();
    throw;
  }
  if (stream && !on_lane) report_worker_events(obs);
  run_phase(fwd_, Phase::post, ctx, obs, 0, T, main_);
  // push: permute the pushed rows from task order back to vertex order.
  NodeId src = f_->node(f_->find(OpKind::Push)[0]).inputs[0];
  const DynamicTensor& a = fwd_.arena[src];
  backend_.copy_rows({const_cast<void*>(a.row(0)), schedule_->num_rows(), a.cols(), a.dtype()}, {}, pushed,
                     schedule_->vertex_of_row);
}

void VertexRunner::backward(MatView d_pushed, MatView d_pull, const Observer* obs) {
  grad_graph();
  ensure_phases();
  if (scatter_src_ != ir::kNoNode) {
    scatter_grad_.reserve_rows(schedule_->num_rows());
    backend_.fill_zero({scatter_grad_.row(0), schedule_->num_rows(), scatter_grad_.cols(), scatter_grad_.dtype()});
  }
  for (size_t i = 0; i < bwd_.arena.size(); ++i)
    if (bwd_.home[i] == Home::arena) bwd_.arena[i].reserve_rows(schedule_->num_rows());
  d_pushed_ = d_pushed;
  d_pull_ = d_pull;
  const ExecContext ctx;
  const auto& tasks = schedule_->tasks;
  const size_t T = tasks.size();
  run_phase(bwd_, Phase::pre, ctx, obs, 0, T, main_);
  // Streaming: once the loop has finished a chunk of tasks (their rows are
  // final: parents run first), the work after the loop for those tasks
  // runs on the worker (a device: is queued on lane 1) while the loop goes on.
  const bool stream = streaming_ && !bwd_.post.empty() && T > 1;
  const bool on_lane = stream && !backend_.concurrent_calls();
  std::vector<size_t> bounds;
  if (stream) {
    if (!worker_ && !on_lane) worker_ = std::make_unique<WorkerStream>();
    worker_lane_.buffer_events = !on_lane;
    bounds = chunk_bounds(true);
  }
  try {
    size_t chunk = 1;
    for (size_t ti = T; ti-- > 0;) {
      if (skip_) task_flags(ti, true, main_);
      for (int32_t u : bwd_.order) run_unit(bwd_, u, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
      if (stream && ti == bounds[chunk]) {
        if (on_lane) {
          const uint64_t chunk_done = backend_.record();
          OnLane side(backend_, 1);
          backend_.wait(chunk_done);
          run_phase(bwd_, Phase::post, ctx, obs, bounds[chunk], bounds[chunk - 1], worker_lane_);
        } else {
          worker_->enqueue([this, ctx, obs, a = bounds[chunk], b = bounds[chunk - 1]] {
            run_phase(bwd_, Phase::post, ctx, obs, a, b, worker_lane_);
          });
        }
        ++chunk;
      }
    }
    if (on_lane) {  // lane 0 goes on after lane 1's last chunk
      uint64_t side_done = 0;
      {
        OnLane side(backend_, 1);
        side_done = backend_.record();
      }
      backend_.wait(side_done);
    } else if (stream) {
      worker_->synchronize();
    }
  } catch (...) {
    if (stream && !on_lane) worker_->drain();
    throw;
  }
  if (stream && !on_lane) report_worker_events(obs);
  else if (!stream) run_phase(bwd_, Phase::post, ctx, obs, 0, T, main_);
}

size_t VertexRunner::allocations() const {
  size_t n = scatter_grad_.arena().allocations();
  for (const Values* v : {&fwd_, &bwd_}) {
    for (const auto& a : v->arena) n += a.arena().allocations();
    for (const auto& s : v->fixed) n += s.buf.allocations();
  }
  return n;
}

}  // namespace sylva::detail
