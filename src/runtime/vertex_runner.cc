#include "vertex_runner.h"

#include <algorithm>
#include <utility>

#include "numerics.h"
#include "sylva/core/error.h"
#include "sylva/core/log.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using ir::OpKind;
using plan::Home;
using plan::Phase;

MatView& ValueBuffer::shape(int64_t rows, int64_t cols, DType dtype) {
  buf.reserve(static_cast<size_t>(std::max<int64_t>(rows * cols, 1)) * dtype_size(dtype));
  view = {buf.data(), rows, cols, dtype};
  return view;
}

std::vector<ValueBuffer> make_value_buffers(size_t n, Memory& memory) {
  std::vector<ValueBuffer> buffers;
  buffers.reserve(n);
  for (size_t i = 0; i < n; ++i) buffers.emplace_back(memory);
  return buffers;
}

namespace {
// The whole [rows, cols] matrix that a task window of an arena belongs to.
MatView rebase(MatView window, const Task& t, int64_t rows) {
  return {static_cast<char*>(window.data) - t.offset * window.cols * static_cast<int64_t>(dtype_size(window.dtype)),
          rows, window.cols, window.dtype};
}
// Whether the backend must have a kernel for `op` (boundary ops and markers move data here).
bool needs_kernel(OpKind op) {
  const ir::OpFlag f = ir::op_def(op).flags;
  return !ir::has(f, ir::OpFlag::boundary) && !ir::has(f, ir::OpFlag::source);
}
// The columns of a value as view() shows it: a row's elements, or a fixed value's columns.
int64_t row_width(const ir::ValueType& type) { return type.rowed ? type.shape.numel() : type.cols(); }
EventPhase event_phase(Phase p) {
  return p == Phase::pre ? EventPhase::before_loop : p == Phase::post ? EventPhase::after_loop : EventPhase::task_loop;
}
}  // namespace

VertexRunner::VertexRunner(std::shared_ptr<const plan::VertexPlan> plan, Backend& backend, ParamStore& params,
                           RunnerOptions options)
    : plan_(std::move(plan)),
      backend_(backend),
      params_(params),
      options_(options),
      windows_(options.on(Optimisation::row_windows) && backend.has_row_windows()),
      facts_(run_facts(*plan_, options.optimisations, windows_)) {
  for (const plan::GraphPlan* p : {&plan_->forward, &plan_->backward})
    for (const Node& n : p->graph->nodes()) {
      if (p->home[static_cast<size_t>(n.id)] == Home::param) params_.value(n.attrs.name);  // throws early if missing
      if (needs_kernel(n.op) && !p->folded[static_cast<size_t>(n.id)])
        SYLVA_CHECK(backend_.supports(n.op), "[", backend_.name(), "] no kernel for op '", ir::op_name(n.op),
                    "' used by vertex function '", p->graph->name(), "'");
    }
  if (plan_->scatter_source != ir::kNoNode) {
    const Node& src = plan_->forward.graph->node(plan_->scatter_source);
    scatter_grad_ = DynamicTensor(src.type.shape, src.type.dtype, backend_.memory());
  }
  init_values(fwd_, plan_->forward, false);
  init_values(bwd_, plan_->backward, true);
  pair_lent_arenas();
  int64_t widest = 1;
  for (const plan::GraphPlan* p : {&plan_->forward, &plan_->backward})
    for (const Node& n : p->graph->nodes()) widest = std::max(widest, row_width(n.type));
  zero_row_ = DynamicTensor(Shape{widest}, DType::f64, backend_.memory());  // f64: as wide as any dtype
}

VertexRunner::~VertexRunner() = default;

void VertexRunner::init_values(Values& v, const plan::GraphPlan& p, bool backward) {
  const ir::Graph& g = *p.graph;
  v.plan = &p;
  v.backward = backward;
  v.arena.resize(g.size());
  v.fixed = make_value_buffers(g.size(), backend_.memory());
  v.group_failed.assign(p.fused.size(), 0);
  v.trimmed = plan::TrimmedPrograms(p);
  v.facts = backward ? &facts_.backward : &facts_.forward;
  v.local_rows.assign(g.size(), 0);
  for (const Node& n : g.nodes())
    if (p.home[static_cast<size_t>(n.id)] == Home::arena)
      v.arena[n.id] = DynamicTensor(n.type.shape, n.type.dtype, backend_.memory());
}

bool VertexRunner::pulled_zero(const MatView& block, size_t ti) const {
  if (batch_plan_->absence[ti].pull_grad_unused) return true;  // every row looked up id -1: no need to read them
  return backend_.memory().host_visible() && all_zero_bytes(block);
}

void VertexRunner::prepare(const GraphBatch& batch, const Schedule& schedule, std::shared_ptr<const BatchPlan> plan) {
  SYLVA_ASSERT(plan && plan->rows == schedule.num_rows() && plan->tasks.size() == schedule.tasks.size(),
               "a batch plan of another schedule");
  SYLVA_ASSERT(static_cast<int64_t>(plan->child_rows.size()) == plan_->gather_slots, "a batch plan of ",
               plan->child_rows.size(), " gather slots for a vertex function of ", plan_->gather_slots);
  batch_ = &batch;
  schedule_ = &schedule;
  batch_plan_ = std::move(plan);
  const ir::Graph& g = *plan_->forward.graph;
  const int64_t rows = schedule.num_rows();
  task_pull_zero_.assign(schedule.tasks.size(), 0);
  minus_ones_.assign(static_cast<size_t>(rows), -1);
  size_task_local();
  main_.zero_f.assign(g.size(), 0);
  for (Values* v : {&fwd_, &bwd_})
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (materialized(*v, i)) reserve(*v, i);
  if (plan_->scatter_source != ir::kNoNode) scatter_grad_.reserve_rows(rows);
  if (zero_row_.reserve_rows(1)) backend_.fill_zero(zero_row_.rows(0, 1));  // once, with the first batch
}

bool VertexRunner::materialized(const Values& v, size_t i) const {
  if (v.plan->home[i] != Home::arena || (windows_ && v.plan->in_window[i])) return false;
  const int32_t group = v.facts->inside_group[i];
  return group < 0 || v.group_failed[static_cast<size_t>(group)];
}

bool VertexRunner::task_local(const Values& v, size_t i) const {
  return v.facts->task_local[i] != 0;
}

void VertexRunner::reserve(Values& v, size_t i) {
  if (batch_plan_->children.in_place && !v.backward && static_cast<NodeId>(i) == batch_plan_->children.nodes.concat) {  // its other rows are views
    v.arena[i].reserve_rows(batch_plan_->children.concat_rows);
    return;
  }
  const int64_t rows = task_local(v, i) ? v.local_rows[i] : schedule_->num_rows();
  if (v.backward && lender_[i] != ir::kNoNode) return reserve_lent(i, rows);
  v.arena[i].reserve_rows(rows);
}

MatView VertexRunner::view(Values& v, NodeId id, const Task& t) {
  const Node& n = v.plan->graph->node(id);
  switch (v.plan->home[id]) {
    case Home::arena:
      if (batch_plan_->children.in_place && id == (v.backward ? batch_plan_->children.nodes.grad : batch_plan_->children.nodes.concat))
        if (const MatView block = children_block(v.backward, t); block.data) return block;
      if (v.backward && lender_[static_cast<size_t>(id)] != ir::kNoNode)
        return lent_rows(static_cast<size_t>(id), t.offset, t.bs);
      if (task_local(v, static_cast<size_t>(id))) {
        SYLVA_ASSERT(t.bs <= v.local_rows[static_cast<size_t>(id)], "node ", id, " (", ir::op_name(n.op),
                     ") of a task of ", t.bs, " rows has ", v.local_rows[static_cast<size_t>(id)],
                     " task-local rows (size_task_local)");
        return v.arena[id].rows(0, t.bs);
      }
      return v.arena[id].rows(t.offset, t.bs);
    case Home::fixed: return v.fixed[id].view;
    case Home::param: return params_.value(n.attrs.name);
    case Home::forward: return view(fwd_, n.attrs.ref, t);
    case Home::scatter_grad: return scatter_grad_.rows(t.offset, t.bs);
    case Home::none: break;
  }
  SYLVA_THROW("[vertex_runner] node ", id, " (", ir::op_name(n.op), ") has no value (internal)");
}

MatView VertexRunner::fixed_out(Values& v, const Node& n) {
  return v.fixed[n.id].shape(n.type.shape.rows(), n.type.cols(), n.type.dtype);
}

MatView VertexRunner::scatter_grad_all() { return scatter_grad_.rows(0, schedule_->num_rows()); }

void VertexRunner::zero_message_grads(std::span<const int32_t> rows) {
  if (!rows.empty()) backend_.copy_rows(scatter_grad_all(), {minus_ones_.data(), rows.size()}, scatter_grad_all(), rows);
}

MatView VertexRunner::messages() const {
  return std::as_const(fwd_.arena[plan_->scatter_source]).rows(0, schedule_->num_rows());
}

// Data movement at F's boundary, for the rows of one task.
void VertexRunner::run_boundary(const Node& n, const Task& t, MatView out) {
  const std::span<const int32_t> vertices = rows_in(schedule_->vertex_of_row, t);
  switch (n.op) {
    case OpKind::Pull:  // from [V, d] in vertex order, or a table (pull_from_table)
      backend_.copy_rows(pull_, batch_plan_->pull_rows.empty() ? vertices : rows_in(batch_plan_->pull_rows, t), out, {});
      return;
    case OpKind::PushGradIn:
      backend_.copy_rows(d_pushed_, d_pushed_rows_.empty() ? vertices : d_pushed_rows_.subspan(t.offset, t.bs), out, {});
      return;
    case OpKind::Gather: backend_.copy_rows(messages(), rows_in(batch_plan_->child_rows[n.attrs.slot], t), out, {}); return;
    case OpKind::GatherReduce: {
      backend_.fill_zero(out);
      int32_t b = batch_plan_->reduce_offsets[t.offset], e = batch_plan_->reduce_offsets[t.offset + t.bs];
      if (e == b) return;  // an empty index span would mean "all rows"
      backend_.add_rows(messages(), {batch_plan_->reduce_src.data() + b, static_cast<size_t>(e - b)},
                        rebase(out, t, schedule_->num_rows()), {batch_plan_->reduce_dst.data() + b, static_cast<size_t>(e - b)});
      return;
    }
    default: break;
  }
  SYLVA_ASSERT(false, "unexpected boundary op ", ir::op_name(n.op));
}

// An unneeded ∂F node is not computed; unused pull rows, and message
// gradients that are written rather than added, get zeros rather than
// stale values.
void VertexRunner::skip_unneeded(const Node& n, const Task& t) {
  if (n.op == OpKind::GatherGradOut && batch_plan_->write_message_grads)
    zero_message_grads(rows_in(batch_plan_->child_rows[n.attrs.slot], t));
  if (n.op == OpKind::PullGradOut && d_pull_.data && !d_pull_table_)  // a table's rows: ids -1, nothing to add
    backend_.copy_rows(d_pull_, {minus_ones_.data(), static_cast<size_t>(t.bs)}, d_pull_,
                       {schedule_->vertex_of_row.data() + t.offset, static_cast<size_t>(t.bs)});
  ++skipped_;
}

void VertexRunner::report(Values& v, const Node& n, const Task& t, int64_t task_index, const Observer* obs,
                          Lane& lane, std::chrono::steady_clock::time_point start, std::span<const NodeId> fused,
                          const Node* folded) {
  if (!obs || !*obs) return;
  const EventPhase phase = event_phase(v.plan->phase[n.id]);
  const ir::Graph& g = *v.plan->graph;
  int64_t flops = ir::flops(g, folded ? *folded : n, t.bs);
  if (!fused.empty()) {
    flops = 0;
    for (NodeId m : fused) flops += ir::flops(g, g.node(m), t.bs);
  }
  const OpEvent e{n, g, phase == EventPhase::task_loop ? task_index : -1, t.bs, std::chrono::steady_clock::now() - start,
                  fused, phase, folded, flops};
  if (lane.buffer_events) lane.events.push_back(e);
  else (*obs)(e);
}

void VertexRunner::run_unit(Values& v, int32_t unit, const Task& t, int64_t task_index, const ExecContext& ctx,
                            const Observer* obs) {
  if (unit >= 0) {
    run_node(v, v.plan->graph->node(unit), t, task_index, ctx, obs);
    return;
  }
  const auto group = static_cast<size_t>(-1 - unit);
  if (!v.group_failed[group]) {
    run_group(v, group, t, task_index, obs);
    if (!v.group_failed[group]) return;
  }
  for (NodeId in : v.plan->fused[group].inputs)  // its members read the rows themselves
    if (v.facts->unwritten[static_cast<size_t>(in)] && known_zero(v, in)) backend_.fill_zero(view(v, in, t));
  for (NodeId m : v.plan->fused[group].members) run_node(v, v.plan->graph->node(m), t, task_index, ctx, obs);
}

bool VertexRunner::known_zero(const Values& v, NodeId id) const {
  return options_.on(Optimisation::skip_zero_work) && (v.backward ? main_.zero_b : main_.zero_f)[static_cast<size_t>(id)] != 0;
}

bool VertexRunner::zero_for_group(const Values& v, NodeId id) const {
  return known_zero(v, id) || (options_.on(Optimisation::skip_zero_work) && v.backward && main_.unneeded[static_cast<size_t>(id)]);
}

MatView VertexRunner::group_input(Values& v, NodeId id, const Task& t) {
  if (!zero_for_group(v, id)) return view(v, id, t);
  const ir::ValueType& type = v.plan->graph->node(id).type;
  return {zero_row_.row(0), 1, row_width(type), type.dtype};
}

// A fused group computes every member, zero ones included (their inputs are
// zeros, so they come out zero) and unneeded ones in ∂F (nobody reads them).
void VertexRunner::run_group(Values& v, size_t group, const Task& t, int64_t task_index, const Observer* obs) {
  const plan::FusedGroup& f = v.plan->fused[group];
  if (options_.on(Optimisation::skip_zero_work) && !v.backward)
    for (NodeId m : f.members)
      main_.zero_f[static_cast<size_t>(m)] = ir::zero_from_inputs(v.plan->graph->node(m), main_.zero_f);
  const auto start = obs ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  main_.in.clear();
  main_.trim.clear();
  for (NodeId in : f.inputs) {
    main_.in.push_back(group_input(v, in, t));
    main_.trim.push_back(zero_for_group(v, in));
  }
  main_.out.clear();
  bool writes = false;
  for (NodeId out : f.outputs) {
    const bool unused = output_unused(v, out, main_);
    main_.trim.push_back(unused);
    writes = writes || !unused;
    const ir::ValueType& type = v.plan->graph->node(out).type;
    main_.out.push_back(unused ? MatView{nullptr, t.bs, type.cols(), type.dtype} : view(v, out, t));
  }
  if (!writes) {
    skipped_ += static_cast<int64_t>(f.members.size());  // nothing to write (and no program for a backend to compile)
    return;
  }
  if (!backend_.run_fused(group_program(v, group), main_.in, main_.out, t.bs)) {
    v.group_failed[group] = 1;  // from now on its members run one by one, each into its own rows
    grow_task_local(v);
    for (NodeId m : f.members) reserve(v, static_cast<size_t>(m));
    log(LogLevel::warning, "[" + backend_.name() + "] no fused kernel for " + f.program.name + " in '" +
                               v.plan->graph->name() + "'; running its ops one by one");
    return;
  }
  if (options_.check_numerics)
    for (size_t k = 0; k < f.outputs.size(); ++k)
      if (!main_.trim[f.inputs.size() + k]) check_numerics(v, v.plan->graph->node(f.outputs[k]), t, main_.out[k], main_);
  report(v, v.plan->graph->node(f.members.back()), t, task_index, obs, main_, start, f.members);
}

bool VertexRunner::output_unused(const Values& v, NodeId o, const Lane& lane) const {
  return sylva::output_unused(facts_, *v.facts, v.backward, static_cast<size_t>(o), v.backward ? lane.zero_b : lane.zero_f,
                              lane.unneeded);
}

const ir::FusedProgram& VertexRunner::group_program(Values& v, size_t group) {
  if (!options_.on(Optimisation::trim_fused_zeros)) return v.plan->fused[group].program;
  return v.trimmed.get(group, main_.trim);
}

void VertexRunner::check_numerics(const Values& v, const Node& n, const Task& t, const MatView& out, Lane& lane) {
  const bool rows_are_vertices = v.plan->home[static_cast<size_t>(n.id)] == Home::arena;
  const NumericsSite site{v.backward ? "backward" : "forward", "vertex function '" + plan_->forward.graph->name() + "'",
                          step_};
  check_finite(backend_, out, n, site, rows_are_vertices ? std::function<std::string(int64_t)>([&](int64_t r) {
    return batch_->describe_vertex(schedule_->vertex_of_row[static_cast<size_t>(t.offset + r)]);
  }) : nullptr, lane.host);
}

void VertexRunner::run_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                            const Observer* obs) {
  const auto i = static_cast<size_t>(n.id);
  const Home h = v.plan->home[i];
  if (!v.plan->runs(n.id) || v.plan->phase[i] != Phase::loop || v.plan->folded[i]) return;  // folded: at its ParamGradOut
  const bool skip = options_.on(Optimisation::skip_zero_work);
  if (windows_ && v.plan->in_window[i]) {  // read through by its consumer's window; F's zero flag still counts
    if (skip && !v.backward) main_.zero_f[i] = batch_plan_->absence[static_cast<size_t>(task_index)].message_absent(n);
    return;
  }
  if (skip && v.backward && main_.unneeded[i]) {
    skip_unneeded(n, t);
    return;
  }
  const bool pull = !v.backward && n.id == plan_->pull;
  if (skip && !v.backward && !pull) {  // the pull's flag is set once its rows are read
    const bool gathers = ir::op_def(n.op).zeros == ir::Zeros::absent_message;
    main_.zero_f[i] = gathers ? batch_plan_->absence[static_cast<size_t>(task_index)].message_absent(n)
                              : ir::zero_from_inputs(n, main_.zero_f);
  }
  if (skip && skips_when_zero(n, h) && (v.backward ? main_.zero_b : main_.zero_f)[i]) {
    // A member of a group that fell back to its members: the others read its rows.
    if (!v.facts->unwritten[i] || v.facts->group[i] >= 0) backend_.fill_zero(h == Home::arena ? view(v, n.id, t) : fixed_out(v, n));
    ++skipped_;  // known zero: no kernel (and no zeros where only fused groups read it)
    return;
  }
  if (in_children_block(v, n, t)) return;  // the rows are where they belong already
  exec_node(v, n, t, task_index, ctx, obs, main_);
  if (skip && pull) {
    const bool z = pulled_zero(view(v, n.id, t), static_cast<size_t>(task_index));
    main_.zero_f[i] = z;
    task_pull_zero_[static_cast<size_t>(task_index)] = z;
  }
}

void VertexRunner::exec_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                             const Observer* obs, Lane& lane) {
  const auto start = obs ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const Node* folded = nullptr;
  if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::side_effect)) {
    if (n.op == OpKind::ParamGradOut && v.plan->folded[static_cast<size_t>(n.inputs[0])])
      folded = &v.plan->graph->node(n.inputs[0]);
    exec_grad_out(v, n, t, ctx, lane);
  } else if (v.plan->home[n.id] == Home::none) {
    return;  // scatter and push are markers: their input's arena is the value
  } else if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::boundary)) {
    run_boundary(n, t, view(v, n.id, t));
  } else if (windows_ && v.plan->window[n.id]) {  // a concat of gathers: each child's rows into its columns
    const MatView out = view(v, n.id, t);
    int64_t col = 0;
    for (NodeId in : n.inputs) {
      const Node& gather = v.plan->graph->node(in);
      const int64_t cols = gather.type.cols();
      backend_.move_row_windows(messages(), rows_in(batch_plan_->child_rows[gather.attrs.slot], t), out, {}, {0, col, cols}, false);
      col += cols;
    }
    if (options_.check_numerics) check_numerics(v, n, t, out, lane);
  } else {
    lane.in.clear();
    for (NodeId in : n.inputs) lane.in.push_back(view(v, in, t));
    MatView out = v.plan->home[n.id] == Home::arena ? view(v, n.id, t) : fixed_out(v, n);
    ExecContext c = ctx;
    c.row_vertex = schedule_->vertex_of_row.data() + t.offset;
    backend_.run({n, lane.in, out, c});
    if (options_.check_numerics) check_numerics(v, n, t, out, lane);
  }
  report(v, n, t, task_index, obs, lane, start, {}, folded);
}

// ∂F's outputs: message gradients into the children's rows, the pull
// gradient into the caller's rows, parameter gradients into the store.
void VertexRunner::exec_grad_out(Values& v, const Node& n, const Task& t, const ExecContext& ctx, Lane& lane) {
  switch (n.op) {
    case OpKind::GatherGradOut:
      if (windows_ && v.plan->window[n.id]) {  // straight from the sliced value's columns
        const Node& slice = v.plan->graph->node(n.inputs[0]);
        backend_.move_row_windows(view(v, slice.inputs[0], t), {}, scatter_grad_all(), rows_in(batch_plan_->child_rows[n.attrs.slot], t),
                                  {slice.attrs.begin, 0, slice.type.cols()}, !batch_plan_->write_message_grads);
        return;
      }
      if (batch_plan_->write_message_grads)
        backend_.copy_rows(view(v, n.inputs[0], t), {}, scatter_grad_all(), rows_in(batch_plan_->child_rows[n.attrs.slot], t));
      else
        backend_.add_rows(view(v, n.inputs[0], t), {}, scatter_grad_all(), rows_in(batch_plan_->child_rows[n.attrs.slot], t));
      return;
    case OpKind::GatherReduceGradOut: {
      const MatView g_abs = rebase(view(v, n.inputs[0], t), t, schedule_->num_rows());
      const int32_t b = batch_plan_->reduce_offsets[t.offset], e = batch_plan_->reduce_offsets[t.offset + t.bs];
      if (e > b)
        backend_.add_rows(g_abs, {batch_plan_->reduce_dst.data() + b, static_cast<size_t>(e - b)}, scatter_grad_all(),
                          {batch_plan_->reduce_src.data() + b, static_cast<size_t>(e - b)});
      return;
    }
    case OpKind::PullGradOut:
      if (!d_pull_.data) return;
      if (d_pull_table_) backend_.add_rows(view(v, n.inputs[0], t), {}, d_pull_, rows_in(batch_plan_->pull_rows, t));
      else backend_.copy_rows(view(v, n.inputs[0], t), {}, d_pull_, rows_in(schedule_->vertex_of_row, t));
      return;
    case OpKind::ParamGradOut: {
      MatView grad = params_.grad(n.attrs.name);
      if (!v.plan->folded[static_cast<size_t>(n.inputs[0])]) {
        backend_.accumulate(view(v, n.inputs[0], t), grad);
        return;
      }
      const Node& mm = v.plan->graph->node(n.inputs[0]);
      lane.in.clear();
      for (NodeId in : mm.inputs) lane.in.push_back(view(v, in, t));
      ExecContext c = ctx;
      backend_.run({mm, lane.in, grad, c, /*accumulate=*/true});
      return;
    }
    default: break;
  }
  SYLVA_ASSERT(false, "unexpected gradient output ", ir::op_name(n.op));
}

void VertexRunner::task_flags(size_t ti, bool backward, Lane& lane, bool assume_nonzero) const {
  const Absence& a = batch_plan_->absence[ti];
  const bool pull_zero = !assume_nonzero && task_pull_zero_[ti] != 0;
  const bool push_zero = !assume_nonzero && backward && ti < task_push_zero_.size() && task_push_zero_[ti];
  // Everything the flags depend on besides the plan.
  const std::array<uint64_t, 2> key{a.slots, uint64_t{a.no_children} | uint64_t{a.pull_grad_unused} << 1 |
                                                 uint64_t{pull_zero} << 2 | uint64_t{push_zero} << 3 |
                                                 uint64_t{backward} << 4};
  for (const TaskFlags& f : lane.flags)
    if (f.key == key) {
      lane.zero_f = f.zero_f;
      if (backward) lane.zero_b = f.zero_b, lane.unneeded = f.unneeded;
      return;
    }
  zero_nodes(plan_->forward, a, pull_zero, {}, lane.zero_f);  // F reads no forward values
  if (backward) {
    zero_nodes(plan_->backward, a, false, lane.zero_f, lane.zero_b, push_zero);
    unneeded_nodes(plan_->backward, a, lane.zero_b, lane.unneeded);
  }
  constexpr size_t kMaxKept = 16;  // distinct absences beyond this are worked out each time
  if (lane.flags.size() < kMaxKept)
    lane.flags.push_back({key, lane.zero_f, backward ? lane.zero_b : std::vector<uint8_t>{},
                          backward ? lane.unneeded : std::vector<uint8_t>{}});
}

size_t VertexRunner::bytes_per_row() const {
  size_t n = plan_->scatter_source != ir::kNoNode ? scatter_grad_.row_bytes() : 0;
  for (const Values* v : {&fwd_, &bwd_})
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (materialized(*v, i)) {
        const size_t own = v->arena[i].row_bytes();
        const ir::NodeId lender = v->backward ? lender_[i] : ir::kNoNode;
        const size_t lent = lender == ir::kNoNode ? 0 : fwd_.arena[static_cast<size_t>(lender)].row_bytes();
        n += own > lent ? own - lent : 0;  // a lender's rows hold the first `lent` bytes of each row
      }
  return n;
}

size_t VertexRunner::sum_over_buffers(const std::function<size_t(const Buffer&)>& f) const {
  size_t n = f(scatter_grad_.arena()) + f(zero_row_.arena());
  for (const Values* v : {&fwd_, &bwd_}) {
    for (const auto& a : v->arena) n += f(a.arena());
    for (const auto& s : v->fixed) n += f(s.buf);
  }
  return n;
}

}  // namespace sylva::detail
