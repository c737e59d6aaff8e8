// Internal: runs a VertexPlan (F and ∂F, sylva/plan/vertex_plan.h) over the
// tasks of a schedule, with one dynamic tensor per per-vertex value. What
// runs where was decided by the plan; this only executes it.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/plan/trimmed_programs.h"
#include "sylva/runtime/batch_plan.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/observer.h"
#include "sylva/runtime/options.h"
#include "sylva/runtime/param_store.h"
#include "sylva/runtime/schedule.h"
#include "side_queue.h"
#include "vertex_boundary.h"
#include "value_buffer.h"
#include "zero_work.h"

namespace sylva::detail {

/// How a runner executes its plan: the executor's optimisations, and
/// whether it streams here (Optimisation::streaming where a core or lane is
/// free for it) and checks numerics.
struct RunnerOptions {
  Optimisations optimisations = Optimisations::all();
  bool streaming = false;
  bool check_numerics = false;
  Precision precision = Precision::fp32;  // of GEMMs (ExecutorOptions::precision)
  bool on(Optimisation o) const { return optimisations.has(o); }
};

class VertexRunner {
 public:
  /// Checks that `backend` has a kernel for every op of F and ∂F and that
  /// every parameter F reads exists (sylva::Error naming it otherwise).
  VertexRunner(std::shared_ptr<const plan::VertexPlan> plan, Backend& backend, ParamStore& params,
               RunnerOptions options);
  ~VertexRunner();

  /// Per minibatch, before forward(): takes the minibatch's plan (built by
  /// build_batch_plan for this runner's VertexPlan and `schedule`: its row
  /// tables, absences, message writes, children blocks) and sizes every
  /// arena for it. With the plan's pull_rows, forward()'s pull is the
  /// lookup's table, not the lookup (Optimisation::pull_from_table).
  void prepare(const GraphBatch& batch, const Schedule& schedule, BatchPlan plan);
  /// Hands the last minibatch's plan back (its tables' memory, for
  /// build_batch_plan's storage) and forgets it: the runner then needs a
  /// prepare() before it runs again.
  BatchPlan release_batch_plan();
  /// Runs F task by task. pull: [V, d] in vertex order (unused if F does
  /// not pull), or with prepare's pull_from_table the table, row r pulling
  /// its row pull_ids[vertex of r] (-1: zeros); pushed: [V, h] in vertex order, or none (no data): then
  /// the pushed rows stay where F wrote them (copy_pushed_rows, copy_pushed).
  void forward(MatView pull, MatView pushed, const ExecContext& ctx, const Observer* obs);
  /// After forward(): dst[dst_idx[k]] = the row F pushed at row
  /// src_idx[k] (row order, row_of_vertex), as Backend::copy_rows; from
  /// the message's columns where the plan pushes from it (push_col).
  void copy_pushed_rows(std::span<const int32_t> src_idx, MatView dst, std::span<const int32_t> dst_idx);
  /// What F pushed, into `pushed` [V, h] in vertex order.
  void copy_pushed(MatView pushed);
  /// Runs ∂F over the tasks in reverse: d_pushed in, d_pull [V, d] out
  /// (vertex order); adds parameter gradients into the ParameterSet.
  /// d_pushed is [V, h] in vertex order, or, with `d_pushed_rows` (one per
  /// row of the schedule), row r's gradient is d_pushed's row
  /// d_pushed_rows[r] (-1: zero). With `d_pull_table` (after a prepare
  /// with pull_from_table), d_pull is the table's gradient and each row's
  /// pull gradient is added into the row it pulled. `tick`, when given, is
  /// called after each task of the loop (Executor::set_gradient_hook).
  void backward(MatView d_pushed, std::span<const int32_t> d_pushed_rows, MatView d_pull, bool d_pull_table,
                const Observer* obs, const std::function<void()>* tick = nullptr);

  const plan::VertexPlan& plan() const { return *plan_; }
  /// The last minibatch's plan (prepare), or null before the first.
  const BatchPlan* batch_plan() const { return mb_.plan ? &*mb_.plan : nullptr; }
  /// What the batch plan's passes read about this runner's plan and options.
  const RunFacts& facts() const { return facts_; }
  /// Ops of F and ∂F skipped (zero or unneeded) since construction.
  int64_t skipped_ops() const { return skipped_.load(); }
  /// f summed over every buffer of F's and ∂F's values (their capacity:
  /// Executor::held_bytes; their allocations: Executor::allocations).
  size_t sum_over_buffers(const std::function<size_t(const Buffer&)>& f) const;
  /// Bytes the per-vertex values of F and ∂F take per row of a minibatch.
  size_t bytes_per_row() const;

 private:
  // What one thread needs to run nodes: operand lists, zero/unneeded flags
  // of the task at hand, per-task states of a phase, and (for a side
  // thread) observer events kept until the caller's thread reports them.
  struct Lane {
    std::vector<MatView> in, out;
    std::vector<uint8_t> zero_f, zero_b, unneeded;
    // run_group: which inputs of the group are zero in the task, then which
    // outputs it leaves unwritten (the key of the group's trimmed programs).
    std::vector<uint8_t> trim;
    // task_zeros' memo, kept across minibatches (zero_work.h).
    std::vector<TaskZeros> memo;
    TaskZeros spare;
    std::vector<TaskState> state;  // [node of the phase][task]
    bool buffer_events = false;
    std::vector<OpEvent> events;
    std::vector<char> host;  // check_numerics: a device value copied to the host
  };
  // The values of F or ∂F, laid out as its plan says.
  struct Values {
    const plan::GraphPlan* plan = nullptr;
    bool backward = false;
    std::vector<DynamicTensor> arena;
    std::vector<ValueBuffer> fixed;
    std::vector<uint8_t> group_failed;  // the backend has no fused kernel: run the members
    // Per fused group: its program without the zero inputs of a task
    // (Optimisation::trim_fused_zeros), by which inputs are zero.
    plan::TrimmedPrograms trimmed;
    // Group membership, unwritten zeros, task-local marks (run_facts;
    // inside_group: a node gets no arena rows while its group runs fused).
    const GraphRunFacts* facts = nullptr;
    // Per task-local node: the rows its arena has for this minibatch (size_task_local).
    std::vector<int64_t> local_rows;
    // Under bf16 (gemm_operands.cc): which fixed values a GEMM of F or ∂F
    // reads, and their bfloat16 copies, converted when the value is written.
    std::vector<uint8_t> gemm_reads;
    std::vector<ValueBuffer> low;
  };

  void init_values(Values& v, const plan::GraphPlan& p, bool backward);
  // Whether node i of v needs rows in its arena (not in a window, not hidden in a fused group).
  bool materialized(const Values& v, size_t i) const;
  // Whether node i of v keeps one task's rows at a time (GraphPlan::task_local, used).
  bool task_local(const Values& v, size_t i) const;
  // Makes room in node i's arena for this minibatch: all rows, or the largest task's.
  void reserve(Values& v, size_t i);
  MatView view(Values& v, ir::NodeId id, const Task& t);
  MatView fixed_out(Values& v, const ir::Node& n);
  // GEMM operands in the precision of RunnerOptions (gemm_operands.cc):
  // marks the fixed values GEMMs read (from the constructor), gives input
  // `in` of `n` as the kernel reads it (a parameter's or a fixed value's
  // bfloat16 copy under bf16), and refreshes a fixed value's copy once it
  // has been written.
  void mark_gemm_operands();
  MatView operand(Values& v, const ir::Node& n, ir::NodeId in, const Task& t);
  void wrote_fixed(Values& v, ir::NodeId id);
  // In the task loop: runs node n for task t unless it runs in another
  // phase or is skipped (zero or unneeded).
  void run_node(Values& v, const ir::Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                const Observer* obs);
  // Runs node n over the rows of t (a task, or a run of tasks outside the loop).
  void exec_node(Values& v, const ir::Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                 const Observer* obs, Lane& lane);
  // The gradient outputs of ∂F, for the rows of t: parameter gradients
  // here, the rest through the boundary.
  void exec_grad_out(Values& v, const ir::Node& n, const Task& t, const ExecContext& ctx, Lane& lane);
  // Tells the observer (or the lane's buffer) that n ran.
  void report(Values& v, const ir::Node& n, const Task& t, int64_t task_index, const Observer* obs, Lane& lane,
              std::chrono::steady_clock::time_point start, std::span<const ir::NodeId> fused = {},
              const ir::Node* folded = nullptr);
  // An unneeded node of ∂F: not computed (Boundary::leave_out).
  void skip_unneeded(const ir::Node& n, const Task& t);
  // check_numerics: throws if `out` (n's value for the rows of t) holds a NaN or an infinity.
  void check_numerics(const Values& v, const ir::Node& n, const Task& t, const MatView& out, Lane& lane);
  // In the task loop: one unit of the plan's order.
  void run_unit(Values& v, int32_t unit, const Task& t, int64_t task_index, const ExecContext& ctx,
                const Observer* obs);
  void run_group(Values& v, size_t group, const Task& t, int64_t task_index, const Observer* obs);
  // Whether a fused group leaves its output o unwritten in a task with
  // `lane`'s flags (trim_fused_zeros): o is not needed there (∂F), or known
  // zero with readers that leave zero rows unread (unwritten_zero_nodes).
  bool output_unused(const Values& v, ir::NodeId o, const Lane& lane) const;
  // Group `group`'s program for inputs zero and outputs unused where
  // main_.trim says (trim_fused_zeros).
  const ir::FusedProgram& group_program(Values& v, size_t group);
  // Whether node id of v is known zero in the task at hand (main lane's flags).
  bool known_zero(const Values& v, ir::NodeId id) const;
  // Whether a fused group takes node id as zeros in the task at hand: it is
  // known zero, or (∂F) unneeded -- not computed, and every member reading
  // it is unneeded too.
  bool zero_for_group(const Values& v, ir::NodeId id) const;
  // A fused group's input: one row of zeros (broadcast to every row) where
  // zero_for_group, its rows otherwise.
  MatView group_input(Values& v, ir::NodeId id, const Task& t);
  // Runs the pre or post nodes of v for tasks [first, end) over runs of
  // consecutive tasks in which they are neither zero nor unneeded.
  void run_phase(Values& v, plan::Phase ph, const ExecContext& ctx, const Observer* obs, size_t first, size_t end,
                 Lane& lane);
  void phase_states(Values& v, const std::vector<ir::NodeId>& nodes, size_t first, size_t end, Lane& lane);
  // F's pull for tasks [first, end) (leaving out those that pulled only id -1 where nobody reads them), and
  // which tasks pulled only zero rows.
  void run_pull(Values& v, const ExecContext& ctx, const Observer* obs, size_t first, size_t end, Lane& lane);
  // Streaming: tasks [bounds[k], bounds[k+1]) form chunk k of a phase queued on the side.
  std::vector<size_t> chunk_bounds(bool reverse) const;
  // The chunks to stream `phase` in (chunk_bounds), or none where streaming
  // is off, the phase is empty or the minibatch makes a single chunk: then
  // the loop would wait for all of the phase's work and overlap none of it.
  std::vector<size_t> stream_chunks(bool reverse, const std::vector<ir::NodeId>& phase) const;
  SideQueue& side();
  void report_side_events(const Observer* obs);
  // zero_f (and for ∂F zero_b, unneeded) of task ti (task_zeros).
  void task_flags(size_t ti, bool backward, Lane& lane) const;
  // Task-local values (task_local_rows.cc): each gets the rows the batch
  // plan gives it (plan_task_local_rows), or the largest task's.
  void size_task_local();
  // After a fused group of v failed: the largest task's rows for every task-local value of v, keeping their rows.
  void grow_task_local(Values& v);
  // The rows of task t in a per-row table (gather's children, vertex_of_row).
  static std::span<const int32_t> rows_in(const std::vector<int32_t>& table, const Task& t) {
    return BatchPlan::rows_in(table, t);
  }
  // Whether the pulled rows of task ti (`block`) are all zero: read on the
  // host, or on a device known from the lookup's ids alone.
  bool pulled_zero(const MatView& block, size_t ti) const;
  // Children in place (children_blocks.cc): F's concat and ∂F's value
  // that are views of the children's rows, where the batch plan says so.
  MatView children_block(bool backward, const Task& t);
  // Whether n is F's concat or a gather gradient of ∂F and t's rows have their children in place.
  bool in_children_block(const Values& v, const ir::Node& n, const Task& t);
  // Lent arenas (lent_arenas.cc): ∂F's values that keep every row use the
  // arenas of F's values nothing reads after F's loop (RunFacts::lender).
  // Room for ∂F's node i (lender[i] set) in its lender's arena: `rows` of i's rows.
  void reserve_lent(size_t i, int64_t rows);
  // Rows [offset, offset + bs) of ∂F's node i, in its lender's arena.
  MatView lent_rows(size_t i, int64_t offset, int64_t bs);

  // The minibatch at hand: its plan (prepare), and which tasks forward()
  // and backward() found pulling or pushed only zeros (skipping zero work,
  // zero_work.h).
  struct Minibatch {
    const GraphBatch* batch = nullptr;
    const Schedule* schedule = nullptr;
    std::optional<BatchPlan> plan;
    uint64_t step = 0;  // of forward (ExecContext::step), for messages
    std::vector<uint8_t> pull_zero, push_zero;
  };

  std::shared_ptr<const plan::VertexPlan> plan_;
  Backend& backend_;
  ParamStore& params_;
  RunnerOptions options_;
  RunFacts facts_;  // of the plan under the options (run_facts): groups, windows, lenders
  Values fwd_, bwd_;
  Boundary boundary_;  // pulls, gathers, pushed gradients in; message and pull gradients out
  Minibatch mb_;
  std::atomic<int64_t> skipped_ = 0;  // ops skipped as zero or unneeded
  DynamicTensor zero_row_;            // one row of zeros as wide as any value, for group_input

  // Streaming: work before/after the task loop runs on the side queue (its
  // lane side_lane_) while the loop runs on the caller's thread (lane main_).
  Lane main_, side_lane_;
  std::unique_ptr<SideQueue> side_;  // last: joins before the values above go
};

}  // namespace sylva::detail
