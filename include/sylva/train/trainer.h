// Trainer: one optimisation step per minibatch over an Executor.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <utility>

#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/optimizer.h"

namespace sylva {

/// How the loss gradient is normalised before backward.
enum class LossScale : uint8_t {
  per_sample,  ///< backward with seed 1 / num_samples: gradients of the mean loss per sample
  none,        ///< backward with seed 1: gradients of the loss as the program computes it
};

struct TrainerOptions {
  BatchingPolicy policy = BatchingPolicy::Bfs;
  /// Global gradient-norm clipping threshold (clip_grad_norm); 0 = off.
  double clip_norm = 0.0;
  /// L2 coefficient for add_weight_decay (parameters with `decay` set); 0 = off.
  double weight_decay = 0.0;
  LossScale normalisation = LossScale::per_sample;
  /// Seed of random ops (dropout).
  uint64_t seed = 0;
  /// Threads for kernels; 0 leaves the backend's setting.
  int threads = 0;
  Device device = Device::cpu();
  /// A backend to use instead of backend_for(device) (ExecutorOptions::backend).
  Backend* backend = nullptr;
};

struct StepResult {
  /// The loss symbol's value on this batch, before normalisation (as forward computed it).
  double loss = 0.0;
  /// Global norm of the gradient the optimiser was given, before clipping
  /// (after normalisation and weight decay).
  double grad_norm = 0.0;
  int32_t samples = 0;
  int32_t vertices = 0;
};

/// Runs zero_grad → forward(train) → backward (seeded per TrainerOptions::
/// normalisation) → add_weight_decay → clip_grad_norm → Optimizer::step on
/// each batch. The Trainer keeps a copy of the Program (copies share the
/// graph, so symbols stay valid); the ParameterSet must outlive it.
/// A non-finite loss or gradient throws sylva::Error before any parameter
/// changes.
///
/// @code
/// Trainer trainer(program, ps, loss, Adam{{.lr = 1e-3}}, {.clip_norm = 5.0});
/// for (const GraphBatch& b : batches) {
///   StepResult r = trainer.step(b);
///   std::printf("loss/sample %.4f  |g| %.3f\n", r.loss / r.samples, r.grad_norm);
/// }
/// double dev_loss = trainer.evaluate(dev_batch);
/// Tensor logits = trainer.executor().value(logits_symbol);  // after evaluate()
/// @endcode
class Trainer {
 public:
  /// `loss` must be a fixed scalar symbol of `program`.
  Trainer(const Program& program, ParameterSet& params, Symbol loss, std::unique_ptr<Optimizer> optimizer,
          TrainerOptions options = {});
  /// Takes a concrete optimiser by value: Trainer(p, ps, loss, Sgd{{.lr = 0.1}}).
  template <std::derived_from<Optimizer> O>
  Trainer(const Program& program, ParameterSet& params, Symbol loss, O optimizer, TrainerOptions options = {})
      : Trainer(program, params, loss, std::make_unique<O>(std::move(optimizer)), options) {}

  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// One training step on `batch` (which must hold at least one sample).
  StepResult step(const GraphBatch& batch);
  /// forward(eval) on `batch`; returns the loss value (not normalised).
  /// Parameters and gradients are untouched.
  double evaluate(const GraphBatch& batch);

  /// The executor, e.g. to read other symbols' values after step()/evaluate().
  Executor& executor() { return executor_; }
  const Executor& executor() const { return executor_; }
  Optimizer& optimizer() { return *optimizer_; }
  const TrainerOptions& options() const { return options_; }
  Symbol loss() const { return loss_; }
  /// Completed steps.
  int64_t steps() const { return steps_; }

 private:
  Program program_;  // before executor_, which refers to it
  ParameterSet& params_;
  Symbol loss_;
  std::unique_ptr<Optimizer> optimizer_;
  TrainerOptions options_;
  Executor executor_;
  int64_t steps_ = 0;
  RowSparsity sparse_;        // row-sparse gradients of the last completed step
  bool sparse_valid_ = false;
};

}  // namespace sylva
