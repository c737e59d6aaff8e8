// Trainer: one optimisation step per minibatch over an Executor.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "sylva/dist/communicator.h"
#include "sylva/dist/device_communicator.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/optimizer.h"

namespace sylva {

/// How the loss gradient is normalised before backward.
enum class LossScale : uint8_t {
  per_sample,  ///< backward with seed 1 / num_samples: gradients of the mean loss per sample
  none,        ///< backward with seed 1: gradients of the loss as the program computes it
};

/// Data-parallel training (docs/distributed.md): how the ranks of
/// TrainerOptions::communicator share a step.
struct DataParallelOptions {
  /// The same global batch gives bitwise-identical parameters for every
  /// world size up to `groups`: the batch is split (by work, independently
  /// of the world size) into `groups` parts whose gradients are computed
  /// separately and added in group order, on every rank. Costs smaller
  /// batches per backward and moves every group's gradient (allgatherv).
  /// false: each rank runs its whole share as one batch, dense gradients are
  /// allreduced in buckets and embedding rows exchanged; parameters then
  /// agree with a one-process run to rounding (≤ 1e-6 relative, in tests).
  bool deterministic = false;
  /// Deterministic mode: the number of parts (≥ the world size).
  int groups = 4;
  /// Dense gradients are allreduced in buckets of about this many bytes.
  int64_t bucket_bytes = int64_t{4} << 20;
  /// Default mode: start each bucket's allreduce during the backward, as
  /// soon as its gradients are final (the classifier's before the vertex
  /// functions' loops end), so that communication overlaps computation.
  /// false: every bucket after the backward. The sums are the same either way.
  bool overlap = true;
  /// Every this many steps, every rank's parameters are hashed and compared,
  /// so replicas that drifted apart are named (0: never).
  int fingerprint_every = 100;
  /// With the optimiser on the device (TrainerOptions::optimizer_on_device,
  /// default mode), how the gradients are summed where they live.
  enum class DeviceSums : uint8_t {
    automatic,  ///< NCCL on a CUDA device, else through the host
    nccl,       ///< dist::nccl_communicator over the communicator
    host,       ///< dist::host_staged_communicator: downloaded, summed, uploaded
  };
  DeviceSums device_sums = DeviceSums::automatic;
};

/// What a Trainer does: how its executor runs (`executor`, passed to the
/// Executor unchanged) and what it does around each step.
///
/// @code
/// TrainerOptions o{.executor = {.policy = BatchingPolicy::Serial, .seed = 7}, .clip_norm = 5.0};
/// @endcode
struct TrainerOptions {
  /// Batching policy, device, backend, seed, threads and the engine
  /// optimisations of the trainer's Executor.
  ExecutorOptions executor = {};
  /// Global gradient-norm clipping threshold (clip_grad_norm); 0 = off.
  double clip_norm = 0.0;
  /// L2 coefficient for add_weight_decay (parameters with `decay` set); 0 = off.
  double weight_decay = 0.0;
  LossScale normalisation = LossScale::per_sample;
  /// On a device whose backend has optimiser kernels (CUDA): keep the
  /// parameters there and run weight decay, clipping and the optimiser
  /// there, so a step moves no parameters or gradients between host and
  /// device. false: the optimiser runs on the host (values uploaded before
  /// every forward, gradients downloaded after every backward).
  bool optimizer_on_device = true;
  /// With the optimiser on the device: download the parameters into the
  /// ParameterSet after every step (so it is always current). false: only
  /// when sync_parameters() is called -- faster, for loops that read the
  /// parameters only now and then (checkpoints, the end of training).
  bool sync_parameters = true;
  /// Data-parallel training: every rank of this communicator (which must
  /// outlive the Trainer) builds the same Trainer and calls step() with the
  /// same global batch; each runs forward/backward on its work-balanced
  /// share (dist::shard_by_work), the gradients are combined, and every
  /// rank applies the same update. The loss is normalised by the global
  /// batch's sample count, so results do not depend on where samples ran.
  /// null: this process alone. With the optimiser on the device the
  /// gradients are summed there (DataParallelOptions::device_sums: NCCL on
  /// CUDA); deterministic mode runs the optimiser on the host.
  dist::Communicator* communicator = nullptr;
  DataParallelOptions parallel = {};
};

struct StepResult {
  /// The loss symbol's value on this batch, before normalisation (as forward computed it).
  double loss = 0.0;
  /// Global norm of the gradient the optimiser was given, before clipping
  /// (after normalisation and weight decay).
  double grad_norm = 0.0;
  int32_t samples = 0;
  int32_t vertices = 0;
  /// Data-parallel steps: this rank's share (samples and vertices), the
  /// largest rank's work over the mean (1 = perfectly balanced), and the
  /// seconds and bytes this rank spent in collectives during the step.
  /// Default mode: sparse_bytes of those were this rank's embedding rows
  /// (ids and values), where exchanging the row-sparse tables whole would
  /// have been sparse_table_bytes.
  int32_t local_samples = 0;
  int32_t local_vertices = 0;
  double imbalance = 1.0;
  double comm_seconds = 0.0;
  int64_t comm_bytes = 0;
  int64_t sparse_bytes = 0;
  int64_t sparse_table_bytes = 0;
};

/// Runs zero_grad → forward(train) → backward (seeded per TrainerOptions::
/// normalisation) → add_weight_decay → clip_grad_norm → Optimizer::step on
/// each batch. The Trainer keeps a copy of the Program (copies share the
/// graph, so symbols stay valid); the ParameterSet must outlive it.
/// A non-finite loss or gradient throws sylva::Error before any parameter
/// changes. On a device (TrainerOptions::optimizer_on_device) the same
/// happens there: the ParameterSet's gradients are then not filled in, and
/// its values are current after each step unless sync_parameters is off.
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

  /// The executor, e.g. to read other symbols' values after step()/evaluate(),
  /// or to time each op with an observer (Executor::set_observer).
  Executor& executor() { return executor_; }
  const Executor& executor() const { return executor_; }
  Optimizer& optimizer() { return *optimizer_; }
  const TrainerOptions& options() const { return options_; }
  Symbol loss() const { return loss_; }
  /// Completed steps.
  int64_t steps() const { return steps_; }
  /// Whether the optimiser runs on the device (TrainerOptions::optimizer_on_device
  /// on a backend with optimiser kernels).
  bool optimizer_on_device() const { return on_device_; }
  /// With the optimiser on the device: brings the ParameterSet's values up
  /// to date (TrainerOptions::sync_parameters does it after every step).
  /// Nothing to do where the host is current (ParamStore::make_current).
  void sync_parameters();
  /// Writes a checkpoint from which training continues exactly as this run
  /// would: the parameters ("param/<name>"), the optimiser's state
  /// ("opt/<name>/<k>") and counters, the step count, and the caller's
  /// `metadata` (epoch, position in the data, its data-order RNG: keys must
  /// not start with "sylva."), as safetensors, atomically. Data-parallel:
  /// every rank calls it; rank 0 writes (all ranks hold the same state) and
  /// every rank returns once the file is in place, or throws rank 0's error.
  /// A run of any world size can resume it (load_state).
  void save_state(const std::string& path, const std::map<std::string, std::string>& metadata = {});
  /// Reads a save_state() checkpoint into this trainer's parameters,
  /// optimiser and step count, and returns the caller's metadata. The
  /// trainer must have the saving run's parameters (names, shapes) and
  /// optimiser kind; anything else is a sylva::Error naming the file.
  std::map<std::string, std::string> load_state(const std::string& path);

  /// On a device: the ParameterSet's values were changed on the host (a
  /// checkpoint loaded, a table overwritten); the next step uploads them
  /// (ParamStore::wrote). Nothing to do on the CPU.
  void parameters_changed_on_host();

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
  bool on_device_ = false;    // optimizer_on_device(): parameters resident on the device
  Buffer sums_;               // on the device: each parameter's sum of squares (Backend::sum_squares), the loss
  std::vector<double> host_sums_;

  // step() is one sequence (trainer.cc); the routes differ only in how the
  // batch's gradients are made and summed.
  enum class Route : uint8_t {
    local,        // this process alone (host or device)
    host_ranks,   // TrainerOptions::communicator or deterministic mode, the optimiser on the host (data_parallel.cc)
    device_ranks  // the ranks with the optimiser on the device (device_parallel.cc)
  };
  Route route() const;
  void zero_gradients();  // what the last completed step left nonzero
  // The routes: forward and backward, gradients summed, r.loss (or, on the
  // device, the loss staged beside the sums), sparse_; local_gradients
  // returns the staged loss's type.
  DType local_gradients(const GraphBatch& batch, StepResult& r);
  void host_ranks_gradients(const GraphBatch& batch, StepResult& r);
  void device_ranks_gradients(const GraphBatch& batch, StepResult& r);
  void stage_loss();                  // after forward, on the device: the loss beside the sums
  // after the gradients, on the device: sets r.loss (staged in `loss_dtype`) and r.grad_norm
  void device_update(StepResult& r, DType loss_dtype);
  void host_update(StepResult& r);  // after the gradients, on the host
  void check_replicas_when_due(Route route);  // DataParallelOptions::fingerprint_every
  struct CommTotals {
    double seconds = 0.0;
    int64_t bytes = 0;
  };
  CommTotals comm_totals(Route route) const;  // the route's communicators' running totals
  std::unique_ptr<dist::Communicator> self_;  // deterministic mode without a communicator
  std::unique_ptr<dist::DeviceCommunicator> device_sums_;  // made at the first such step
  std::vector<Buffer> sparse_rows_;                         // per row-sparse parameter: its rows, packed
};

}  // namespace sylva
