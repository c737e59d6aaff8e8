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

namespace {
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
      facts_(run_facts(*plan_, options.optimisations,
                       options.on(Optimisation::row_windows) && backend.has_row_windows())),
      boundary_(*plan_, backend) {
  for (const plan::GraphPlan* p : {&plan_->forward, &plan_->backward})
    for (const Node& n : p->graph->nodes()) {
      if (p->home[static_cast<size_t>(n.id)] == Home::param) params_.value(n.attrs.name);  // throws early if missing
      if (needs_kernel(n.op) && !p->folded[static_cast<size_t>(n.id)])
        SYLVA_CHECK(backend_.supports(n.op), "[", backend_.name(), "] no kernel for op '", ir::op_name(n.op),
                    "' used by vertex function '", p->graph->name(), "'");
    }
  init_values(fwd_, plan_->forward, false);
  init_values(bwd_, plan_->backward, true);
  mark_gemm_operands();
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
  if (mb_.plan->absence[ti].pull_grad_unused) return true;  // every row looked up id -1: no need to read them
  return backend_.memory().host_visible() && all_zero_bytes(block);
}

void VertexRunner::prepare(const GraphBatch& batch, const Schedule& schedule, BatchPlan plan) {
  SYLVA_ASSERT(plan.rows == schedule.num_rows() && plan.tasks.size() == schedule.tasks.size(),
               "a batch plan of another schedule");
  SYLVA_ASSERT(static_cast<int64_t>(plan.child_rows.size()) == plan_->gather_slots, "a batch plan of ",
               plan.child_rows.size(), " gather slots for a vertex function of ", plan_->gather_slots);
  mb_.batch = &batch;
  mb_.schedule = &schedule;
  mb_.plan = std::move(plan);
  const ir::Graph& g = *plan_->forward.graph;
  mb_.pull_zero.assign(schedule.tasks.size(), 0);
  size_task_local();
  main_.zero_f.assign(g.size(), 0);
  for (Values* v : {&fwd_, &bwd_})
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (materialized(*v, i)) reserve(*v, i);
  boundary_.prepare(*mb_.plan, schedule,
                    plan_->scatter_source == ir::kNoNode ? nullptr : &fwd_.arena[plan_->scatter_source]);
  if (zero_row_.reserve_rows(1)) backend_.fill_zero(zero_row_.rows(0, 1));  // once, with the first batch
}

BatchPlan VertexRunner::release_batch_plan() {
  BatchPlan p = mb_.plan ? std::move(*mb_.plan) : BatchPlan{};
  mb_.plan.reset();
  return p;
}

bool VertexRunner::materialized(const Values& v, size_t i) const {
  if (v.plan->home[i] != Home::arena || (facts_.row_windows && v.plan->in_window[i])) return false;
  const int32_t group = v.facts->inside_group[i];
  return group < 0 || v.group_failed[static_cast<size_t>(group)];
}

bool VertexRunner::task_local(const Values& v, size_t i) const {
  return v.facts->task_local[i] != 0;
}

void VertexRunner::reserve(Values& v, size_t i) {
  if (mb_.plan->children.in_place && !v.backward && static_cast<NodeId>(i) == mb_.plan->children.nodes.concat) {  // its other rows are views
    v.arena[i].reserve_rows(mb_.plan->children.concat_rows);
    return;
  }
  const int64_t rows = task_local(v, i) ? v.local_rows[i] : mb_.schedule->num_rows();
  if (v.backward && facts_.lender[i] != ir::kNoNode) return reserve_lent(i, rows);
  v.arena[i].reserve_rows(rows);
}

MatView VertexRunner::view(Values& v, NodeId id, const Task& t) {
  const Node& n = v.plan->graph->node(id);
  switch (v.plan->home[id]) {
    case Home::arena:
      if (mb_.plan->children.in_place && id == (v.backward ? mb_.plan->children.nodes.grad : mb_.plan->children.nodes.concat))
        if (const MatView block = children_block(v.backward, t); block.data) return block;
      if (v.backward && facts_.lender[static_cast<size_t>(id)] != ir::kNoNode)
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
    case Home::scatter_grad: return boundary_.message_grads(t);
    case Home::none: break;
  }
  SYLVA_THROW("[vertex_runner] node ", id, " (", ir::op_name(n.op), ") has no value (internal)");
}

MatView VertexRunner::fixed_out(Values& v, const Node& n) {
  return v.fixed[n.id].shape(n.type.shape.rows(), n.type.cols(), n.type.dtype);
}

void VertexRunner::skip_unneeded(const Node& n, const Task& t) {
  boundary_.leave_out(n, t);
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
                          mb_.step};
  check_finite(backend_, out, n, site, rows_are_vertices ? std::function<std::string(int64_t)>([&](int64_t r) {
    return mb_.batch->describe_vertex(mb_.schedule->vertex_of_row[static_cast<size_t>(t.offset + r)]);
  }) : nullptr, lane.host);
}

void VertexRunner::run_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                            const Observer* obs) {
  const auto i = static_cast<size_t>(n.id);
  const Home h = v.plan->home[i];
  if (!v.plan->runs(n.id) || v.plan->phase[i] != Phase::loop || v.plan->folded[i]) return;  // folded: at its ParamGradOut
  const bool skip = options_.on(Optimisation::skip_zero_work);
  if (facts_.row_windows && v.plan->in_window[i]) return;  // read through by its consumer's window
  if (skip && v.backward && main_.unneeded[i]) {
    skip_unneeded(n, t);
    return;
  }
  if (skip && skips_when_zero(n, h) && (v.backward ? main_.zero_b : main_.zero_f)[i]) {
    // A member of a group that fell back to its members: the others read its rows.
    if (!v.facts->unwritten[i] || v.facts->group[i] >= 0) {
      backend_.fill_zero(h == Home::arena ? view(v, n.id, t) : fixed_out(v, n));
      if (h != Home::arena) wrote_fixed(v, n.id);
    }
    ++skipped_;  // known zero: no kernel (and no zeros where only fused groups read it)
    return;
  }
  if (in_children_block(v, n, t)) return;  // the rows are where they belong already
  exec_node(v, n, t, task_index, ctx, obs, main_);
  if (skip && !v.backward && n.id == plan_->pull) {  // in the loop: the task's flags change if its rows were all zero
    const auto ti = static_cast<size_t>(task_index);
    mb_.pull_zero[ti] = pulled_zero(view(v, n.id, t), ti);
    if (mb_.pull_zero[ti]) task_flags(ti, false, main_);
  }
}

void VertexRunner::exec_node(Values& v, const Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                             const Observer* obs, Lane& lane) {
  const auto start = obs ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const Node* folded = nullptr;
  if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::side_effect)) {
    if (v.plan->folded[static_cast<size_t>(n.inputs[0])]) folded = &v.plan->graph->node(n.inputs[0]);  // a GEMM folded into its param_grad_out
    exec_grad_out(v, n, t, ctx, lane);
  } else if (v.plan->home[n.id] == Home::none) {
    return;  // scatter and push are markers: their input's arena is the value
  } else if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::boundary)) {
    boundary_.read(n, t, view(v, n.id, t));
  } else if (facts_.row_windows && v.plan->window[n.id]) {  // a concat of gathers: each child's rows into its columns
    const MatView out = view(v, n.id, t);
    boundary_.read_windows(*v.plan->graph, n, t, out);
    if (options_.check_numerics) check_numerics(v, n, t, out, lane);
  } else {
    lane.in.clear();
    for (NodeId in : n.inputs) lane.in.push_back(operand(v, n, in, t));
    const bool fixed = v.plan->home[n.id] != Home::arena;
    MatView out = fixed ? fixed_out(v, n) : view(v, n.id, t);
    ExecContext c = ctx;
    c.row_vertex = mb_.schedule->vertex_of_row.data() + t.offset;
    c.gemm = options_.precision;
    backend_.run({n, lane.in, out, c});
    if (fixed) wrote_fixed(v, n.id);
    if (options_.check_numerics) check_numerics(v, n, t, out, lane);
  }
  report(v, n, t, task_index, obs, lane, start, {}, folded);
}

void VertexRunner::exec_grad_out(Values& v, const Node& n, const Task& t, const ExecContext& ctx, Lane& lane) {
  if (n.op != OpKind::ParamGradOut) {  // into the children's or the caller's rows
    const bool window = facts_.row_windows && v.plan->window[n.id];  // straight from the sliced value's columns
    const Node* slice = window ? &v.plan->graph->node(n.inputs[0]) : nullptr;
    boundary_.write(n, t, view(v, slice ? slice->inputs[0] : n.inputs[0], t), slice);
    return;
  }
  MatView grad = params_.grad(n.attrs.name);
  if (!v.plan->folded[static_cast<size_t>(n.inputs[0])]) {
    backend_.accumulate(view(v, n.inputs[0], t), grad);
    return;
  }
  const Node& mm = v.plan->graph->node(n.inputs[0]);  // a GEMM folded into it: grad += A·B
  lane.in.clear();
  for (NodeId in : mm.inputs) lane.in.push_back(operand(v, mm, in, t));
  ExecContext c = ctx;
  c.gemm = options_.precision;
  backend_.run({mm, lane.in, grad, c, /*accumulate=*/true});
}

void VertexRunner::task_flags(size_t ti, bool backward, Lane& lane) const {
  const bool push_zero = backward && ti < mb_.push_zero.size() && mb_.push_zero[ti];
  const TaskZeros& z = task_zeros(*plan_, mb_.plan->absence[ti], mb_.pull_zero[ti] != 0, push_zero, lane.memo, lane.spare);
  lane.zero_f = z.zero_f;
  if (backward) lane.zero_b = z.zero_b, lane.unneeded = z.unneeded;
}

size_t VertexRunner::bytes_per_row() const {
  size_t n = plan_->scatter_source != ir::kNoNode ? boundary_.grads().row_bytes() : 0;
  for (const Values* v : {&fwd_, &bwd_})
    for (size_t i = 0; i < v->arena.size(); ++i)
      if (materialized(*v, i)) {
        const size_t own = v->arena[i].row_bytes();
        const ir::NodeId lender = v->backward ? facts_.lender[i] : ir::kNoNode;
        const size_t lent = lender == ir::kNoNode ? 0 : fwd_.arena[static_cast<size_t>(lender)].row_bytes();
        n += own > lent ? own - lent : 0;  // a lender's rows hold the first `lent` bytes of each row
      }
  return n;
}

size_t VertexRunner::sum_over_buffers(const std::function<size_t(const Buffer&)>& f) const {
  size_t n = f(boundary_.grads().arena()) + f(zero_row_.arena());
  for (const Values* v : {&fwd_, &bwd_}) {
    for (const auto& a : v->arena) n += f(a.arena());
    for (const auto& s : v->fixed) n += f(s.buf);
  }
  return n;
}

}  // namespace sylva::detail
