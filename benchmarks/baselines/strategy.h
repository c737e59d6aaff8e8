// The interface every benchmarked execution strategy implements: Sylva
// itself (Bfs, Serial), the dynamic-declaration engine (unbatched and with
// agenda autobatching), padded batching, and the optional libtorch models.
// The benchmark driver (benchmarks/driver/bench_suite.cc) builds one per
// workload and runs minibatches through it; tests check that every strategy
// computes Sylva's loss and gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <sylva/sylva.h>

#include "tree_lstm_model.h"  // examples::TreeLstmCell

namespace sylva::bench {

/// The workloads of the Cavs evaluation.
enum class Workload : uint8_t { tree_lstm, var_lstm, fixed_lstm, tree_fc };
std::string workload_name(Workload w);
/// "tree-lstm", "var-lstm", "fixed-lstm", "tree-fc"; sylva::Error otherwise.
Workload parse_workload(const std::string& name);

/// Sizes of one workload's model. Every strategy of a run uses the same
/// ParameterSet, created by add_params().
struct ModelConfig {
  Workload workload = Workload::tree_lstm;
  int64_t vocab = 0;     // embedding rows
  int64_t embed = 300;   // word vector size (Tree-LSTM d, LSTM embedding)
  int64_t hidden = 150;  // h
  int64_t classes = 5;   // Tree-LSTM / Tree-FC classes (LSTMs predict the vocabulary)
  int64_t layers = 1;    // LSTM layers
  DType dtype = DType::f32;
  /// LSTMs, Sylva only: x·W + b inside the vertex function (see
  /// examples::LstmLmConfig::projection_in_cell).
  bool projection_in_cell = false;
  /// Tree-LSTM and LSTMs, Sylva only: the cell written gate by gate
  /// (examples::TreeLstmConfig::per_gate).
  bool per_gate = false;
  /// Tree-LSTM: Tai et al.'s cell or the DyNet benchmarks' (see
  /// examples::TreeLstmCell); every strategy computes the same cell.
  examples::TreeLstmCell cell = examples::TreeLstmCell::tai;
};

/// Adds the workload's parameters (same names and layouts as the example
/// models in examples/common) to `ps`.
void add_params(ParameterSet& ps, const ModelConfig& cfg);

/// What one minibatch cost. Times are seconds of wall clock.
struct StepStats {
  double loss = 0.0;         // summed cross-entropy of the minibatch (nats)
  double build_s = 0.0;      // graph construction / preprocessing (declaring expressions,
                             // scheduling, padding, autobatch analysis)
  double compute_s = 0.0;    // running the kernels: forward, and backward when training
  double movement_s = 0.0;   // the part of compute_s spent moving rows (gathers, scatters,
                             // copies into contiguous blocks, contiguity checks); -1 unknown
  int64_t kernels = 0;       // kernel calls issued (batched groups count once); -1 unknown
};

/// One way of executing a workload. `step` runs a minibatch: the forward
/// pass, and with `train` the backward pass, leaving d(loss)/d(param) of the
/// summed loss in the ParameterSet's gradients (zeroed by the strategy
/// first; the DyNet strategies keep them in DyNet, see
/// dynet_strategies.h). `update` then applies the optimiser the strategy
/// was made with (StrategyOptions::optimizer): the benchmark times step
/// and update together by a wall clock, since at small batches the update
/// is much of what a user waits for and systems differ in its cost.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual StepStats step(std::span<const InputGraph> batch, bool train) = 0;
  /// Called before a measurement whose minibatches are the consecutive
  /// runs of `batch` samples of `samples` from the first: a strategy may
  /// look at them untimed (gemm-floor records their GEMMs). Nothing by default.
  virtual void prepare(std::span<const InputGraph> samples, int64_t batch, bool train) {
    (void)samples, (void)batch, (void)train;
  }
  /// One optimiser step from the last step()'s gradients; sylva::Error
  /// when the strategy was made without an optimizer or cannot run one.
  virtual void update() { SYLVA_THROW("[bench] strategy ", name(), " has no optimizer update"); }
  /// Waits until the device has run everything the last step() and
  /// update() queued (nothing to wait for on the CPU): the benchmark stops
  /// its clock after this, so that a step on a device is timed whole.
  virtual void synchronize() {}
  /// Copies parameters the strategy keeps on a device back into its
  /// ParameterSet (nothing to do where they live on the host).
  virtual void download_parameters() {}
  /// MB the strategy held for the values of its largest minibatch so far:
  /// activations and their gradients, not parameters, their gradients or
  /// optimiser state; -1 where it cannot tell.
  virtual double values_mb() const { return -1; }
  /// MB a system with memory pools sized up front reserved in all of them
  /// (what it grew to included); -1 for a system without such pools.
  virtual double pools_mb() const { return -1; }
};

/// Samples of a workload: SST trees (tree-lstm), PTB sentence chains
/// (var-lstm), 64-token PTB stream chains (fixed-lstm) or complete binary
/// trees of `leaves` leaves (tree-fc). Per vertex ids "words" (-1 = none)
/// and "labels" (-1 = no loss).
struct Samples {
  std::vector<InputGraph> graphs;
  int64_t vocab = 0;
  int64_t classes = 0;
  std::string unit;         // what throughput counts: "sentences", "words" or "vertices"
  std::string description;  // e.g. "SST train, 8544 trees"
};

}  // namespace sylva::bench

namespace sylva::bench {

/// Options of the built-in strategies.
struct StrategyOptions {
  /// Every strategy's kernel threads and device (the DyNet and libtorch
  /// strategies: CPU only; threads 1 here, where ExecutorOptions' 0 leaves
  /// the backend's setting). The sylva strategies' Executor gets all of it,
  /// with the engine optimisations switchable for ablations, except
  /// `policy`, which the strategy's name sets (sylva: Bfs, sylva-serial:
  /// Serial).
  ExecutorOptions executor{.threads = 1};
  /// Measure movement_s (Sylva: a profiler observer on every op; the
  /// dynamic-declaration engine: a clock around its copies). Off for
  /// throughput runs, where the clock reads would cost time themselves.
  bool measure_movement = false;
  /// The update after each training step: "none" (step() only), "sgd",
  /// "adagrad" or "adam", at learning rate `lr`. Every strategy runs its
  /// system's own optimiser: Sylva's for sylva, dynamic-decl and padded;
  /// DyNet's trainers for dynet (Adam dense, as Sylva's).
  std::string optimizer = "none";
  double lr = 0.001;
};

/// "sylva", "sylva-serial", "dynamic-decl", "dynamic-decl-autobatch",
/// "dynamic-decl-autobatch-dense" (the same agenda over Sylva's full cell at
/// every vertex: zero word and child terms included), and "padded" for the
/// LSTMs (the libtorch strategies live in libtorch/).
std::vector<std::string> builtin_strategy_names(Workload w);
/// Also made by make_builtin_strategy, but not a system and so in no
/// default list: "gemm-floor", a bound rather than a way of training. Its
/// prepare() runs each minibatch once through Sylva (the "sylva"
/// strategy's executor) and records the GEMMs it ran; its step() replays
/// just those GEMMs through the same backend's MatMul kernel on operands
/// allocated once (gemm_replay.h), and its update() is Sylva's optimiser
/// step. Its step time is what no system running the same GEMMs (same
/// shapes, same kernel) and the same optimiser can beat; step() reports
/// loss NaN. CPU only.
inline constexpr const char* kGemmFloor = "gemm-floor";
/// sylva::Error for an unknown name or one that does not fit the workload.
std::unique_ptr<Strategy> make_builtin_strategy(const std::string& name, const ModelConfig& cfg, ParameterSet& ps,
                                                const StrategyOptions& options);

struct SampleOptions {
  std::string data_dir;    // "" = find_dataset's search (flag, $SYLVA_DATA, shared/data)
  int32_t leaves = 256;    // tree-fc
  int64_t tree_fc_trees = 1024;
  int32_t stream_length = 64;  // fixed-lstm
  uint64_t seed = 1;
};
/// The training samples of a workload (see Samples); sylva::Error naming
/// every place looked when a dataset is missing.
Samples load_samples(Workload w, const SampleOptions& options);

}  // namespace sylva::bench
