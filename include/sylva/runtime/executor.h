// Executor: runs a Program (forward and backward) over a minibatch.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "sylva/backend/backend.h"
#include "sylva/core/tensor.h"
#include "sylva/frontend/program.h"
#include "sylva/plan/program_plan.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/observer.h"
#include "sylva/runtime/param_store.h"
#include "sylva/runtime/schedule.h"
#include "sylva/sched/ios.h"

namespace sylva {

enum class Mode : uint8_t { train, eval };

struct ExecutorOptions {
  BatchingPolicy policy = BatchingPolicy::Bfs;
  /// Where kernels run and values live. On a device with memory of its own
  /// (CUDA) the executor keeps its arenas, values and parameter copies
  /// there: parameters are uploaded at each forward() and their gradients
  /// added into the ParameterSet at the end of each backward().
  Device device = Device::cpu();
  /// A backend to use instead of backend_for(device) (your own device, or a
  /// test double); it must outlive the executor.
  Backend* backend = nullptr;
  /// Seed of random ops (dropout).
  uint64_t seed = 0;
  /// Threads for kernels (GEMMs); 0 leaves the backend's setting.
  int threads = 0;
  /// Skip work a task provably does not need (same results; see
  /// docs/architecture.md, "Skipping zero work"): ops of F whose inputs are
  /// messages absent at every vertex of the task (leaves) or an all-zero
  /// pulled block produce zeros without running, and in ∂F the matching
  /// parameter-gradient products and the gradients that flow only to absent
  /// children (or to pulled rows looked up with id -1) are not computed.
  bool skip_zero_work = true;
  /// Lazy batching: parameter gradients dW += Xᵀ·dY of F run once after
  /// ∂F's task loop, as one GEMM over all rows of the minibatch (per run of
  /// tasks that contribute), instead of one small GEMM per task.
  bool lazy_param_grads = true;
  /// Eager batching: ops of F that read no child's message (the pull and
  /// what is computed from it alone, e.g. the input projection x·W, and
  /// values of parameters only) run once over all rows before the task
  /// loop; in ∂F, gradients that reach no child (e.g. the pulled input's
  /// gradient dY·Wᵀ) run once over all rows after it. Per run of tasks that
  /// need them, with skip_zero_work.
  bool eager_batching = true;
  /// Fusion: directly linked row-local ops of F and ∂F in the task loop
  /// (elementwise math, slices, concats) run as one pass over the task's
  /// rows, intermediates kept in a per-row scratch buffer; only values read
  /// outside the group (or by ∂F) are written out. Groups come from
  /// passes::fusion_groups. A backend without fused kernels runs the ops one
  /// by one (with a warning).
  bool fusion = true;
  /// Fused groups without their zero inputs: in a task where an input of
  /// a fused group is known zero (skip_zero_work), the group runs a program
  /// with what that makes trivial left out (passes::without_zero_inputs:
  /// x + 0 is x, an assemble drops zero pieces, steps nothing reads are
  /// not computed), kept per group and pattern of zero inputs; likewise
  /// it leaves unwritten the outputs the task does not need (∂F's
  /// gradients for a leaf's absent children; known-zero outputs nobody
  /// then reads). Tree-FC's inner vertices add no zero word row; a
  /// Tree-LSTM leaf multiplies no zero child's c and computes no gradient
  /// for it. Same results. Needs fusion and skip_zero_work.
  bool trim_fused_zeros = true;
  /// Row windows: a concat of F's gathered children copies their rows
  /// straight into its columns, and in ∂F a gather gradient adds a slice's
  /// columns straight into the children's message gradients, instead of
  /// gathering (slicing) into values of their own first (VertexPlan's
  /// window marks; where the backend has_row_windows(), the CPU's).
  bool row_windows = true;
  /// Task-local values: a per-vertex value that only ops of the same task
  /// read (an intermediate of F or ∂F that neither ∂F, a parent's gather,
  /// the push nor the work before or after the loop reads; VertexPlan's
  /// task_local marks) lives in one block the size of the largest task
  /// that writes it (at a tree's leaves, often the largest task, values
  /// computed from the children are known zero and not written), reused
  /// by every task, instead of a row per vertex of the minibatch. Less
  /// memory, and the block stays in cache from one task to the next.
  bool task_local_values = true;
  /// Children in place: where, in a minibatch, every vertex's children
  /// sit in consecutive rows in slot order and the children of consecutive
  /// rows follow one another (complete trees in BFS order: Cavs's
  /// contiguous blocks), F's concat of gather(0) .. gather(S-1) is a view
  /// of the children's message rows ([bs, S·h] over the same memory as
  /// [S·bs, h]) and ∂F writes that concat's gradient straight into the
  /// children's message-gradient rows: neither copies a row. Needs
  /// row_windows and skip_zero_work; any other batch runs as before.
  bool children_in_place = true;
  /// Lent arenas: a value of F that keeps a row per vertex but that nothing
  /// reads once F's task loop is done (neither ∂F, a parent's gather, the
  /// push nor the pull: x·W computed before the loop for a Tree-LSTM's gate
  /// group) lends its arena to a value of ∂F that keeps a row per vertex
  /// (the gate gradients kept for the lazy weight gradients), which the
  /// backward writes after F is done with it. One buffer instead of two;
  /// the same results. Values of F are then not kept past backward(),
  /// which only ∂F reads anyway.
  bool lend_forward_arenas = true;
  /// Direct row selection: where every consumer of a vertex function's
  /// output is a select_rows of it (a classifier on the labelled vertices),
  /// the selections copy their rows straight from the function's rows
  /// (ProgramPlan::selected_in_place), and a selection's gradient read only
  /// by the function's gradient goes straight into its rows, instead of
  /// laying the whole output, and a gradient of zeros and the selected rows,
  /// out in vertex order first. value() of the output still works: it is
  /// laid out then.
  bool direct_row_selection = true;
  /// Pulls from the table: where a vertex function's pull input is a
  /// lookup of a parameter (an embedding table) by input_ids, read by
  /// nothing else, F's pull copies its rows straight from the table
  /// (ProgramPlan::pulled_in_place) and, where that table's gradient is
  /// the lookup's alone (row-sparse), ∂F's pull gradient is added straight
  /// into the table's gradient rows -- instead of laying the looked-up rows
  /// and their gradient out in vertex order ([V, d] each) in between.
  /// value() of the lookup still works: it is computed then.
  bool pull_from_table = true;
  /// Streaming: the work eager and lazy batching moved out of the task loop
  /// runs on a second thread while the loop runs -- F's, chunk by chunk
  /// ahead of the tasks that need it (each task waits for its chunk's
  /// event); ∂F's, for each chunk of tasks the loop has finished. Uses one
  /// more core than `threads`, so it is skipped when `threads` (or 1) is
  /// not below the number of cores. The CPU form of running on a second
  /// CUDA stream.
  bool streaming = true;
  /// IOS (docs/architecture.md, "IOS on Sylva's graphs"): F and ∂F are
  /// scheduled by the IOS dynamic program (`ios_options`; cost: sched/ios_ir's
  /// analytical CPU model) and re-emitted in the plan's order -- matmuls
  /// that share their left operand and have fixed right operands (gate
  /// matmuls written one per gate) become one matmul over the weights
  /// concatenated once per minibatch. The program's static graph and its
  /// gradient run in their plans' order (reordered, never merged: their
  /// nodes are the user's Symbols). Read when the executor is built.
  bool ios = true;
  ios::Options ios_options{.variant = ios::Variant::both, .r = 3, .s = 8};
  /// Stop at the first NaN or infinity an op computes, in F, ∂F or the
  /// program, forward or backward: a sylva::Error names the pass, the
  /// graph, the node and its op, the step and the vertex and sample of the
  /// first bad row (instead of a NaN loss later). Costs a scan of every
  /// op's output (and, on a device, a copy of it to the host); off, nothing.
  bool check_numerics = false;
  /// Host memory a minibatch's values may take beyond what the executor
  /// already holds; forward() estimates a batch's need (its vertices times
  /// the bytes per vertex of every per-vertex value of F, ∂F and the
  /// program) before allocating and refuses a larger batch with a
  /// sylva::Error naming it. 0: 80% of available_memory_bytes() at that
  /// moment. Not applied to device memory (CUDA). An allocation that still
  /// fails is a sylva::Error too, never an abort.
  size_t memory_budget_bytes = 0;
};

/// Compiles a Program once (each vertex function's plan, F and ∂F, when its
/// apply is first seen; the program's gradient at the first backward) and
/// runs it over minibatches. The program and the parameter set must
/// outlive the executor (it keeps references), and so must the
/// batch passed to forward() until backward() has run. Buffers and dynamic-tensor
/// arenas are kept across minibatches and only grow.
///
/// @code
/// Executor ex(program, params, {.policy = BatchingPolicy::Bfs});
/// ex.forward(batch, Mode::train);
/// double l = ex.scalar(loss);
/// params.zero_grad();
/// ex.backward(loss);           // adds d(loss)/d(param) into params' grads
/// @endcode
class Executor {
 public:
  Executor(const Program& program, ParameterSet& params, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Schedules the batch (BFS or serial) and evaluates every node.
  void forward(const GraphBatch& batch, Mode mode);
  /// Random ops (dropout) key on a step counter that forward() advances
  /// by one before it runs: set_step(k) makes the next forward() draw as
  /// step k + 1. The Trainer sets its own step count before each training
  /// forward, so masks follow the training step, not how many forwards
  /// (evaluations, data-parallel parts) ran before.
  void set_step(uint64_t step);
  /// Value of a program symbol after forward(): [rows, cols] for rowed
  /// values (vertex order), the declared shape otherwise. A copy.
  Tensor value(Symbol s) const;
  double scalar(Symbol s) const;
  /// The same value where it lives, in the backend's memory (device memory
  /// on a GPU), without a copy or a wait: for passing it to the backend's
  /// own calls (the Trainer copies the loss beside its gradient sums, so
  /// one download per step brings both). Valid until the next forward()
  /// or backward().
  MatView device_value(Symbol s) const;
  /// Backpropagates from `loss` (a fixed scalar), scaling its gradient by
  /// `seed`; adds parameter gradients into the ParameterSet.
  void backward(Symbol loss, double seed = 1.0);

  const Schedule& schedule() const;
  /// Seconds the last forward() spent preparing the batch: building the
  /// schedule and the gather index tables of every apply (for benchmarks
  /// that separate preprocessing from computation).
  double preprocess_seconds() const;
  /// Parameters whose gradient from the last backward() came only from
  /// lookup (embedding tables), with the rows it touched. Their lookup
  /// gradient is added row by row instead of as a dense [n, d] matrix.
  const RowSparsity& sparse_grads() const;
  const ExecutorOptions& options() const;
  void set_policy(BatchingPolicy p);
  /// Called after every op; nullptr to remove. Costs a clock read per op.
  void set_observer(Observer obs);
  /// Called while backward() runs, on the thread that called it: after
  /// every op of the program's gradient and after every task of a vertex
  /// function's gradient loop, with the parameters whose gradients became
  /// final there (mostly none; each named once; a parameter this loss
  /// gives no gradient is never named). For work overlapped with the
  /// backward: the data-parallel Trainer starts the allreduce of a bucket
  /// of gradients once they are final, and moves the started ones on from
  /// here. With a store on a device the gradients reach the ParameterSet
  /// only at the end of backward(): then no parameter is named. nullptr
  /// to remove. A throw from the hook ends backward() with it.
  using GradientHook = std::function<void(std::span<const std::string> final)>;
  void set_gradient_hook(GradientHook hook);
  /// The plan of backward(loss): its run order, which parameters get
  /// row-sparse gradients, where each gradient becomes final. It depends on
  /// the program only (no forward() needed).
  const plan::ProgramGradPlan& gradient_plan(Symbol loss);
  /// F as the executor runs it (IOS-planned with ExecutorOptions::ios), for inspection.
  const ir::Graph& vertex_function(Symbol apply) const;
  /// ∂F of the vertex function applied by node `apply` of the program (for inspection).
  const ir::Graph& vertex_gradient(Symbol apply) const;
  /// The whole plan of that apply's vertex function (F, ∂F, phases, fused
  /// groups; print it with to_text()). Observers see these graphs' nodes.
  const plan::VertexPlan& vertex_plan(Symbol apply) const;
  /// Tells an executor on a device that since the last forward() the host
  /// changed, of the parameters named in `only`, just the listed rows (the
  /// others anywhere): the next forward() uploads only those rows of them.
  /// The Trainer says so after an optimiser step that updates only sparse
  /// rows. Without the call every parameter is uploaded in full. Nothing
  /// to do on the CPU.
  void parameters_changed(const RowSparsity& only);
  /// The parameters as this executor's backend sees them (copies on a
  /// device); the Trainer runs a device optimiser on them.
  ParamStore& param_store();
  Backend& backend();
  /// Number of allocations made so far for values and arenas (steady-state checks).
  size_t allocations() const;
  /// Bytes the values, arenas and value gradients hold now (their capacity;
  /// parameters, their gradients and optimiser state not included).
  size_t held_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sylva
