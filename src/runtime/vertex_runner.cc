#include "vertex_runner.h"

#include <algorithm>

#include "sylva/core/error.h"
#include "sylva/passes/autodiff.h"

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
}  // namespace

MatView param_view(Parameter& p) {
  return {p.value.raw(), p.value.shape().rows(), p.value.shape().cols(), p.value.dtype()};
}
MatView grad_view(Parameter& p) {
  return {p.grad.raw(), p.grad.shape().rows(), p.grad.shape().cols(), p.grad.dtype()};
}

VertexRunner::VertexRunner(std::shared_ptr<const ir::Graph> f, Backend& backend, ParameterSet& params)
    : f_(std::move(f)), backend_(backend), params_(params) {
  const ir::Graph& g = *f_;
  auto scatters = g.find(OpKind::Scatter);
  if (!scatters.empty()) {
    scatter_src_ = g.node(scatters[0]).inputs[0];
    scatter_grad_ = DynamicTensor(g.node(scatter_src_).type.shape, g.dtype());
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
    if (n.op == OpKind::Param) params_[n.attrs.name];  // throws early if missing
  init_values(fwd_, g);
}

const ir::Graph& VertexRunner::grad_graph() {
  if (!df_) {
    df_ = passes::differentiate_vertex_function(*f_);
    init_values(bwd_, *df_);
    folded_ = passes::foldable_param_matmuls(*df_);
  }
  return *df_;
}

void VertexRunner::init_values(Values& v, const ir::Graph& g) {
  v.graph = &g;
  v.home.assign(g.size(), Home::none);
  v.arena.clear();
  v.arena.resize(g.size());
  v.fixed.clear();
  v.fixed.resize(g.size());
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
    if (h == Home::arena) v.arena[n.id] = DynamicTensor(n.type.shape, n.type.dtype);
  }
}

void VertexRunner::prepare(const GraphBatch& batch, const Schedule& schedule) {
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
    case Home::param: return param_view(params_[n.attrs.name]);
    case Home::forward: return view(fwd_, n.attrs.ref, t);
    case Home::scatter_grad: return {scatter_grad_.row(t.offset), t.bs, scatter_grad_.cols(), scatter_grad_.dtype()};
    case Home::none: break;
  }
  SYLVA_THROW("[vertex_runner] node ", id, " (", ir::op_name(n.op), ") has no value (internal)");
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
  Home h = v.home[n.id];
  if (h == Home::param || h == Home::forward || h == Home::scatter_grad) return;
  if (&v == &bwd_ && folded_[n.id]) return;  // runs at its ParamGradOut
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
      MatView grad = grad_view(params_[n.attrs.name]);
      if (&v == &bwd_ && folded_[n.inputs[0]]) {
        const Node& mm = v.graph->node(n.inputs[0]);
        scratch_in_.clear();
        for (NodeId in : mm.inputs) scratch_in_.push_back(view(v, in, t));
        ExecContext c = ctx;
        backend_.run({mm, scratch_in_, grad, c, /*accumulate=*/true});
      } else {
        backend_.accumulate(view(v, n.inputs[0], t), grad);
      }
      break;
    }
    default: {
      scratch_in_.clear();
      for (NodeId in : n.inputs) scratch_in_.push_back(view(v, in, t));
      MatView out = h == Home::arena ? view(v, n.id, t)
                                     : v.fixed[n.id].shape(n.type.shape.rows(), n.type.cols(), n.type.dtype);
      ExecContext c = ctx;
      c.row_vertex = schedule_->vertex_of_row.data() + t.offset;
      backend_.run({n, scratch_in_, out, c});
    }
  }
  if (obs && *obs)
    (*obs)({n, *v.graph, task_index, t.bs, std::chrono::steady_clock::now() - start});
}

void VertexRunner::forward(MatView pull, MatView pushed, const ExecContext& ctx, const Observer* obs) {
  pull_ = pull;
  const auto& tasks = schedule_->tasks;
  for (size_t ti = 0; ti < tasks.size(); ++ti)
    for (const Node& n : f_->nodes()) run_node(fwd_, n, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
  // push: permute the pushed rows from task order back to vertex order.
  NodeId src = f_->node(f_->find(OpKind::Push)[0]).inputs[0];
  const DynamicTensor& a = fwd_.arena[src];
  backend_.copy_rows({const_cast<void*>(a.row(0)), schedule_->num_rows(), a.cols(), a.dtype()}, {}, pushed,
                     schedule_->vertex_of_row);
}

void VertexRunner::backward(MatView d_pushed, MatView d_pull, const Observer* obs) {
  const ir::Graph& dg = grad_graph();
  if (scatter_src_ != ir::kNoNode) {
    scatter_grad_.reserve_rows(schedule_->num_rows());
    backend_.fill_zero({scatter_grad_.row(0), schedule_->num_rows(), scatter_grad_.cols(), scatter_grad_.dtype()});
  }
  for (size_t i = 0; i < bwd_.arena.size(); ++i)
    if (bwd_.home[i] == Home::arena) bwd_.arena[i].reserve_rows(schedule_->num_rows());
  d_pushed_ = d_pushed;
  d_pull_ = d_pull;
  ExecContext ctx;
  const auto& tasks = schedule_->tasks;
  for (size_t ti = tasks.size(); ti-- > 0;)
    for (const Node& n : dg.nodes()) run_node(bwd_, n, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
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
