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
#include "sylva/runtime/batch_plan.h"
#include "sylva/runtime/observer.h"
#include "sylva/runtime/options.h"
#include "sylva/runtime/param_store.h"
#include "sylva/runtime/schedule.h"

namespace sylva {

enum class Mode : uint8_t { train, eval };

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
  /// F as the executor runs it (IOS-planned with Optimisation::ios), for inspection.
  const ir::Graph& vertex_function(Symbol apply) const;
  /// ∂F of the vertex function applied by node `apply` of the program (for inspection).
  const ir::Graph& vertex_gradient(Symbol apply) const;
  /// The whole plan of that apply's vertex function (F, ∂F, phases, fused
  /// groups; print it with to_text()). Observers see these graphs' nodes.
  const plan::VertexPlan& vertex_plan(Symbol apply) const;
  /// The plan of the last minibatch for that apply (its row tables, what
  /// each task lacks, message writes, children blocks; print it with
  /// to_text()). sylva::Error before the first forward().
  const BatchPlan& batch_plan(Symbol apply) const;
  /// Tells an executor on a device that the host changed the parameters'
  /// values (an optimiser step on the host, a table overwritten): of the
  /// parameters named in `only`, just the listed rows; all of the others
  /// (ParamStore::wrote). The next forward() uploads what changed. Nothing
  /// to do on the CPU.
  void parameters_changed(const RowSparsity* only = nullptr);
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
