// The phases around a VertexRunner's task loop: the work eager and lazy
// batching moved out of it, run over runs of tasks, and streamed on the
// side queue while the loop runs.
#include <algorithm>
#include <utility>

#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using plan::Home;
using plan::Phase;

// Per node of `nodes` and task of [first, end): run, zero or unneeded.
void VertexRunner::phase_states(Values& v, const std::vector<NodeId>& nodes, size_t first, size_t end, Lane& lane) {
  const size_t T = end - first;
  lane.state.assign(nodes.size() * T, TaskState::run);
  for (size_t ti = first; ti < end && options_.on(Optimisation::skip_zero_work); ++ti) {
    task_flags(ti, v.backward, lane);
    const std::vector<uint8_t>& zero = v.backward ? lane.zero_b : lane.zero_f;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const auto id = static_cast<size_t>(nodes[k]);
      lane.state[k * T + (ti - first)] = v.backward && lane.unneeded[id] ? TaskState::unneeded
                                         : zero[id]                     ? TaskState::zero
                                                                        : TaskState::run;
    }
  }
}

void VertexRunner::run_phase(Values& v, Phase ph, const ExecContext& ctx, const Observer* obs, size_t first,
                             size_t end, Lane& lane) {
  const std::vector<NodeId>& nodes = ph == Phase::pre ? v.plan->pre : v.plan->post;
  if (nodes.empty() || first >= end) return;
  const auto& tasks = mb_.schedule->tasks;
  const size_t T = end - first;
  const Task all{tasks[first].offset, tasks[end - 1].offset + tasks[end - 1].bs - tasks[first].offset};
  // The pull runs first: which tasks pulled all-zero rows decides what else is zero.
  const NodeId pull = v.backward ? ir::kNoNode : plan_->pull;
  if (std::find(nodes.begin(), nodes.end(), pull) != nodes.end()) run_pull(v, ctx, obs, first, end, lane);
  phase_states(v, nodes, first, end, lane);
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = v.plan->graph->node(nodes[k]);
    if (n.id == pull) continue;
    const Home home = v.plan->home[n.id];
    if (home == Home::fixed) {  // a value of parameters only: once, before the first task needs it
      if (first == 0) exec_node(v, n, all, -1, ctx, obs, lane);
      continue;
    }
    const TaskState* state = lane.state.data() + k * T;
    for (size_t i = 0; i < T;) {
      const TaskState st = state[i];
      Task span{tasks[first + i].offset, 0};
      int64_t count = 0;
      for (; i < T && state[i] == st; ++i, ++count) span.bs += tasks[first + i].bs;
      if (st == TaskState::run || (st == TaskState::zero && home != Home::arena)) {
        exec_node(v, n, span, -1, ctx, obs, lane);
      } else if (st == TaskState::zero) {
        if (!v.facts->unwritten[n.id]) backend_.fill_zero(view(v, n.id, span));
        skipped_ += count;
      } else {
        skip_unneeded(n, span);
        skipped_ += count - 1;
      }
    }
  }
}

// Where no reader needs the rows of tasks that pulled only id -1 (their
// value is known zero: unwritten_zero_nodes), they are not copied.
void VertexRunner::run_pull(Values& v, const ExecContext& ctx, const Observer* obs, size_t first, size_t end,
                            Lane& lane) {
  const auto& tasks = mb_.schedule->tasks;
  const Node& n = v.plan->graph->node(plan_->pull);
  const bool skip = options_.on(Optimisation::skip_zero_work);
  const bool leave = skip && v.facts->unwritten[n.id];
  for (size_t i = first; i < end;) {
    const bool unused = leave && mb_.plan->absence[i].pull_grad_unused;
    Task span{tasks[i].offset, 0};
    size_t j = i;
    for (; j < end && (leave && mb_.plan->absence[j].pull_grad_unused) == unused; ++j) span.bs += tasks[j].bs;
    if (unused) skipped_ += static_cast<int64_t>(j - i);
    else exec_node(v, n, span, -1, ctx, obs, lane);
    for (; i < j && skip; ++i) mb_.pull_zero[i] = unused || pulled_zero(view(v, n.id, tasks[i]), i);
    i = j;
  }
}

// Chunks of tasks holding at least a quarter of the rows (and 256 rows), in
// task order; for the backward loop, in the reverse order it runs them.
std::vector<size_t> VertexRunner::chunk_bounds(bool reverse) const {
  const auto& tasks = mb_.schedule->tasks;
  const int64_t target = std::max<int64_t>(256, mb_.schedule->num_rows() / 4);
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

std::vector<size_t> VertexRunner::stream_chunks(bool reverse, const std::vector<NodeId>& phase) const {
  if (!options_.streaming || phase.empty() || mb_.schedule->tasks.size() < 2) return {};
  std::vector<size_t> b = chunk_bounds(reverse);
  if (b.size() < 3) b.clear();  // one chunk
  return b;
}

SideQueue& VertexRunner::side() {
  if (!side_) side_ = make_side_queue(backend_);
  side_lane_.buffer_events = side_->other_thread();
  return *side_;
}

void VertexRunner::report_side_events(const Observer* obs) {
  if (obs && *obs)
    for (const OpEvent& e : side_lane_.events) (*obs)(e);
  side_lane_.events.clear();
}

void VertexRunner::forward(MatView pull, MatView pushed, const ExecContext& ctx, const Observer* obs) {
  boundary_.start_forward(pull);
  mb_.step = ctx.step;
  const auto& tasks = mb_.schedule->tasks;
  const size_t T = tasks.size();
  const bool skip = options_.on(Optimisation::skip_zero_work);
  // Streaming: the work before the loop runs on the side queue, chunk by
  // chunk, and each task waits only for its own chunk.
  const std::vector<size_t> bounds = stream_chunks(false, fwd_.plan->pre);
  const bool stream = !bounds.empty();
  std::vector<uint64_t> events;
  if (stream) {
    SideQueue& q = side();
    for (size_t c = 0; c + 1 < bounds.size(); ++c)
      events.push_back(q.enqueue([this, ctx, obs, a = bounds[c], b = bounds[c + 1]] {
        run_phase(fwd_, Phase::pre, ctx, obs, a, b, side_lane_);
      }));
  } else {
    run_phase(fwd_, Phase::pre, ctx, obs, 0, T, main_);
  }
  try {
    size_t chunk = 0;
    for (size_t ti = 0; ti < T; ++ti) {
      if (stream && ti == bounds[chunk]) side_->wait(events[chunk++]);
      if (skip) task_flags(ti, false, main_);  // with the pull in the loop, its rows taken as nonzero until read
      for (int32_t u : fwd_.plan->order) run_unit(fwd_, u, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
    }
  } catch (...) {
    if (stream) side_->drain();
    throw;
  }
  if (stream) report_side_events(obs);
  run_phase(fwd_, Phase::post, ctx, obs, 0, T, main_);
  if (pushed.data) copy_pushed(pushed);
}

void VertexRunner::copy_pushed_rows(std::span<const int32_t> src_idx, MatView dst, std::span<const int32_t> dst_idx) {
  const int64_t rows = mb_.schedule->num_rows();
  if (plan_->push_col < 0) {
    backend_.copy_rows(std::as_const(fwd_.arena[plan_->push_source]).rows(0, rows), src_idx, dst, dst_idx);
    return;
  }
  SYLVA_ASSERT(facts_.row_windows, "a plan that pushes from the message on a backend without row windows");
  const int64_t cols = plan_->forward.graph->node(plan_->push_source).type.cols();
  backend_.move_row_windows(boundary_.messages(), src_idx, dst, dst_idx, {plan_->push_col, 0, cols}, false);
}

// push: permute the pushed rows from task order back to vertex order.
void VertexRunner::copy_pushed(MatView pushed) { copy_pushed_rows({}, pushed, mb_.schedule->vertex_of_row); }

void VertexRunner::backward(MatView d_pushed, std::span<const int32_t> d_pushed_rows, MatView d_pull,
                            bool d_pull_table, const Observer* obs, const std::function<void()>* tick) {
  boundary_.start_backward(d_pushed, d_pushed_rows, d_pull, d_pull_table);
  mb_.push_zero.assign(mb_.schedule->tasks.size(), 0);
  if (options_.on(Optimisation::skip_zero_work))  // rows -1 read no pushed gradient
    for (size_t ti = 0; ti < mb_.push_zero.size(); ++ti) mb_.push_zero[ti] = boundary_.no_pushed_grad(mb_.schedule->tasks[ti]);
  const ExecContext ctx;
  const auto& tasks = mb_.schedule->tasks;
  const size_t T = tasks.size();
  run_phase(bwd_, Phase::pre, ctx, obs, 0, T, main_);
  // Streaming: once the loop has finished a chunk of tasks (their rows are
  // final: parents run first), the work after the loop for those tasks
  // runs on the side queue while the loop goes on.
  const std::vector<size_t> bounds = stream_chunks(true, bwd_.plan->post);
  const bool stream = !bounds.empty();
  if (stream) side();
  try {
    size_t chunk = 1;
    for (size_t ti = T; ti-- > 0;) {
      if (options_.on(Optimisation::skip_zero_work)) task_flags(ti, true, main_);
      for (int32_t u : bwd_.plan->order) run_unit(bwd_, u, tasks[ti], static_cast<int64_t>(ti), ctx, obs);
      if (tick) (*tick)();
      if (stream && ti == bounds[chunk]) {
        side_->enqueue([this, ctx, obs, a = bounds[chunk], b = bounds[chunk - 1]] {
          run_phase(bwd_, Phase::post, ctx, obs, a, b, side_lane_);
        });
        ++chunk;
      }
    }
    if (stream) side_->join();
  } catch (...) {
    if (stream) side_->drain();
    throw;
  }
  if (stream) report_side_events(obs);
  else run_phase(bwd_, Phase::post, ctx, obs, 0, T, main_);
}

}  // namespace sylva::detail
