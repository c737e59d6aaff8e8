// Internal: runs one vertex function (F) and its gradient (∂F) over the
// tasks of a schedule, with one dynamic tensor per per-vertex value.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/runtime/executor.h"
#include "sylva/runtime/param_store.h"
#include "sylva/sched/ios.h"
#include "stream.h"

namespace sylva::detail {

/// A fixed-size value: a grow-only buffer and its current view.
struct Slot {
  Slot() = default;
  explicit Slot(Memory& memory) : buf(memory) {}
  Buffer buf;
  MatView view;
  /// Points view at `rows x cols` of dtype, growing buf if needed.
  MatView& shape(int64_t rows, int64_t cols, DType dtype);
};

/// `n` slots whose buffers come from `memory`.
std::vector<Slot> make_slots(size_t n, Memory& memory);

class VertexRunner {
 public:
  /// With `ios`, F (here) and ∂F (when derived) are IOS-planned:
  /// ios::plan_graph re-emits them in their plan's order, merged matmuls
  /// rewritten (see ExecutorOptions::ios).
  VertexRunner(std::shared_ptr<const ir::Graph> f, Backend& backend, ParamStore& params,
               std::optional<ios::Options> ios = std::nullopt);

  /// Per minibatch, before forward(): validates arity, builds the gather
  /// index tables and sizes every arena for the schedule's rows.
  /// `pull_ids` (vertex order, may be empty): when F's pull input is a
  /// lookup, its ids; rows with id -1 are zero rows whose gradient is unused.
  void prepare(const GraphBatch& batch, const Schedule& schedule, std::span<const int32_t> pull_ids = {});
  /// See ExecutorOptions::skip_zero_work.
  void set_skip_zero_work(bool on) { skip_ = on; }
  /// See ExecutorOptions::lazy_param_grads.
  void set_lazy_param_grads(bool on) {
    phases_dirty_ |= lazy_ != on;
    lazy_ = on;
  }
  /// See ExecutorOptions::streaming.
  void set_streaming(bool on) { streaming_ = on; }
  /// See ExecutorOptions::fusion.
  void set_fusion(bool on) {
    phases_dirty_ |= fusion_ != on;
    fusion_ = on;
  }
  /// Fused groups of F (backward = false) or ∂F, as lists of their nodes.
  std::vector<std::vector<ir::NodeId>> fused_groups(bool backward) const;
  /// See ExecutorOptions::eager_batching.
  void set_eager_batching(bool on) {
    phases_dirty_ |= eager_ != on;
    eager_ = on;
  }
  /// Ops of F and ∂F skipped (zero or unneeded) since construction.
  int64_t skipped_ops() const { return skipped_.load(); }
  /// Runs F task by task. pull: [V, d] in vertex order (unused if F does
  /// not pull); pushed: [V, h] in vertex order.
  void forward(MatView pull, MatView pushed, const ExecContext& ctx, const Observer* obs);
  /// Runs ∂F over the tasks in reverse: d_pushed [V, h] in, d_pull [V, d]
  /// out (vertex order); adds parameter gradients into the ParameterSet.
  void backward(MatView d_pushed, MatView d_pull, const Observer* obs);

  const ir::Graph& graph() const { return *f_; }
  const ir::Graph& grad_graph();
  size_t allocations() const;

 private:
  // Where a node's value lives.
  enum class Home : uint8_t { arena, fixed, param, forward, scatter_grad, none };
  // When a node runs: once over all rows before the task loop (eager), per
  // task, or once over all rows after it (lazy).
  enum class Phase : uint8_t { pre, loop, post };
  // What one thread needs to run nodes: operand lists, zero/unneeded flags
  // of the task at hand, per-task states of a phase, and (for the worker)
  // observer events kept until the caller's thread reports them.
  struct Lane {
    std::vector<MatView> in, out;
    std::vector<uint8_t> zero_f, zero_b, dead_b;
    std::vector<uint8_t> state;  // [node of the phase][task]: 0 run, 1 zero, 2 unneeded
    bool buffer_events = false;
    std::vector<OpEvent> events;
  };
  struct Values {
    const ir::Graph* graph = nullptr;
    std::vector<Home> home;
    std::vector<DynamicTensor> arena;
    std::vector<Slot> fixed;
    std::vector<Phase> phase;
    std::vector<ir::NodeId> pre, post;  // nodes that run outside the task loop, in order
    // Fusion: the task loop runs `order` (node ids, or -1 - group).
    struct Fused {
      std::vector<ir::NodeId> members, inputs, outputs;
      FusedProgram program;
      bool failed = false;  // the backend has no fused kernel: run the members
    };
    std::vector<Fused> fused;
    std::vector<int32_t> order;
  };

  void init_values(Values& v, const ir::Graph& g);
  MatView view(Values& v, ir::NodeId id, const Task& t);
  // In the task loop: runs node n for task t unless it runs in another
  // phase or is skipped (zero or unneeded).
  void run_node(Values& v, const ir::Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                const Observer* obs);
  // Runs node n over the rows of t (a task or a run of tasks).
  void exec_node(Values& v, const ir::Node& n, const Task& t, int64_t task_index, const ExecContext& ctx,
                 const Observer* obs, Lane& lane);
  void skip_unneeded(const ir::Node& n, const Task& t);
  // Eager and lazy batching: which nodes run outside the task loop.
  void plan_phases(Values& v, bool backward);
  void ensure_phases();
  void plan_fusion(Values& v, bool backward);
  // In the task loop: one unit of v.order.
  void run_unit(Values& v, int32_t unit, const Task& t, int64_t task_index, const ExecContext& ctx,
                const Observer* obs);
  void run_group(Values& v, size_t group, const Task& t, int64_t task_index, const Observer* obs);
  // Runs the pre or post nodes of v for tasks [first, end) over runs of
  // consecutive tasks in which they are neither zero nor unneeded.
  void run_phase(Values& v, Phase ph, const ExecContext& ctx, const Observer* obs, size_t first, size_t end,
                 Lane& lane);
  // Streaming: tasks [bounds[k], bounds[k+1]) form chunk k of a phase queued on the worker.
  std::vector<size_t> chunk_bounds(bool reverse) const;
  void report_worker_events(const Observer* obs);
  // zero_f (and for ∂F zero_b, dead_b) of task ti.
  void task_flags(size_t ti, bool backward, Lane& lane) const;
  void run_boundary(const ir::Node& n, const Task& t, MatView out);
  // Whether the pulled rows of task ti (`block`) are all zero: read on the
  // host, or on a device known from the lookup's ids alone.
  bool pulled_zero(const MatView& block, size_t ti) const;

  std::optional<ios::Options> ios_;
  std::shared_ptr<const ir::Graph> f_;
  std::shared_ptr<const ir::Graph> df_;
  Backend& backend_;
  ParamStore& params_;
  Values fwd_, bwd_;
  DynamicTensor scatter_grad_;
  ir::NodeId scatter_src_ = ir::kNoNode;  // the node F scatters

  const GraphBatch* batch_ = nullptr;
  const Schedule* schedule_ = nullptr;
  std::vector<std::vector<int32_t>> child_rows_;  // per gather slot, per row: the child's row or -1
  std::vector<int32_t> reduce_offsets_, reduce_src_, reduce_dst_;  // per-row child rows (gather_reduce)
  MatView pull_, pushed_, d_pushed_, d_pull_;
  std::vector<bool> folded_;  // ∂F matmuls run as grad += A·B at their ParamGradOut

  // Skipping zero work. Per task, bits of what is absent at every row:
  // gather slot s (bit s < 62), all children (kNoChildren), a needed pull
  // gradient (kPullGradUnused); and whether the pulled block was all zero.
  static constexpr uint64_t kNoChildren = 1ull << 62, kPullGradUnused = 1ull << 63;
  static bool absent_message(const ir::Node& n, uint64_t bits);
  void compute_zero(const ir::Graph& g, uint64_t bits, bool pull_zero, const std::vector<uint8_t>& zero_f,
                    std::vector<uint8_t>& zero) const;
  void compute_dead(uint64_t bits, Lane& lane) const;
  bool skip_ = true;
  std::atomic<int64_t> skipped_ = 0;
  std::vector<uint64_t> task_bits_;
  std::vector<uint8_t> task_pull_zero_;
  std::vector<std::vector<ir::NodeId>> consumers_b_;  // ∂F node -> nodes reading it
  std::vector<int32_t> minus_ones_;                  // copy_rows source indices for zero rows

  // Eager and lazy batching.
  bool lazy_ = true, eager_ = true, fusion_ = true, phases_dirty_ = true;

  // Streaming: work before/after the task loop runs on worker_ (its lane
  // worker_lane_) while the loop runs on the caller's thread (lane main_).
  bool streaming_ = false;
  Lane main_, worker_lane_;
  std::unique_ptr<WorkerStream> worker_;  // last: joins before the values above go
};

}  // namespace sylva::detail
