// Sylva itself: the example models run by the Executor (Bfs or Serial),
// and the gemm-floor bound made from its GEMMs (strategy.h, kGemmFloor).
#include <limits>
#include <map>
#include <optional>

#include "gemm_replay.h"

#include "lstm_lm.h"
#include "tree_fc_model.h"
#include "tree_lstm_model.h"
#include "strategies_internal.h"

namespace sylva::bench {
namespace {

// The program and loss of the workload's example model (dropout off).
struct SylvaModel {
  std::optional<examples::TreeLstmModel> tree_lstm;
  std::optional<examples::LstmLm> lstm;
  std::optional<examples::TreeFcModel> tree_fc;
  const Program* program = nullptr;
  Symbol loss;

  SylvaModel(ParameterSet& ps, const ModelConfig& c) {
    switch (c.workload) {
      case Workload::tree_lstm:
        tree_lstm.emplace(ps, examples::TreeLstmConfig{.vocab = c.vocab, .dim = c.embed, .hidden = c.hidden,
                                                       .classes = c.classes, .dropout = 0.0, .dtype = c.dtype,
                                                       .per_gate = c.per_gate, .cell = c.cell});
        program = &tree_lstm->program;
        loss = tree_lstm->loss;
        break;
      case Workload::var_lstm: case Workload::fixed_lstm:
        lstm.emplace(ps, examples::LstmLmConfig{.vocab = c.vocab, .embed = c.embed, .hidden = c.hidden,
                                                .layers = c.layers, .dtype = c.dtype,
                                                .projection_in_cell = c.projection_in_cell, .per_gate = c.per_gate});
        program = &lstm->program;
        loss = lstm->loss;
        break;
      case Workload::tree_fc:
        tree_fc.emplace(ps, examples::TreeFcConfig{.vocab = c.vocab, .hidden = c.hidden, .classes = c.classes,
                                                   .dtype = c.dtype});
        program = &tree_fc->program;
        loss = tree_fc->loss;
        break;
    }
  }
};

// StrategyOptions::executor with the policy the strategy's name says.
ExecutorOptions with_policy(ExecutorOptions o, BatchingPolicy policy) {
  o.policy = policy;
  return o;
}

class SylvaStrategy final : public Strategy {
 public:
  SylvaStrategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy, const StrategyOptions& o,
                bool gemm_floor)
      : ps_(ps), model_(ps, cfg), ex_(*model_.program, ps, with_policy(o.executor, policy)),
        name_(gemm_floor                           ? kGemmFloor
              : policy == BatchingPolicy::Serial ? "sylva-serial"
              : o.executor.precision == Precision::bf16 ? "sylva-bf16"
                                                        : "sylva"),
        measure_(o.measure_movement && !gemm_floor), update_(o, name_), floor_(gemm_floor), replay_(ex_.backend()) {
    if (measure_) ex_.set_observer(profiler_.observer());
    if (floor_) {
      SYLVA_CHECK(ex_.param_store().on_host(), "[bench] ", kGemmFloor, " replays GEMMs on host buffers: CPU only");
      ex_.set_observer([this](const OpEvent& e) {
        if (!recording_) return;
        if (std::optional<RecordedGemm> g = recorded_gemm(e)) recording_->push_back(std::move(*g));
      });
    }
    // On a device the parameters stay there and gradients are zeroed there, as
    // the Trainer does with its optimiser on the device (the baselines likewise).
    if (!ex_.param_store().on_host()) ex_.param_store().set_update_side(Side::device);
  }

  std::string name() const override { return name_; }

  void update() override { update_.run(ex_.param_store(), ex_.sparse_grads()); }
  void synchronize() override { ex_.backend().synchronize(); }
  void download_parameters() override {
    ex_.param_store().make_current(Side::host);
  }
  double values_mb() const override { return floor_ ? -1.0 : static_cast<double>(ex_.held_bytes()) / (1 << 20); }

  // gemm-floor: one untimed Sylva step per minibatch, recording its GEMMs.
  void prepare(std::span<const InputGraph> samples, int64_t batch, bool train) override {
    if (!floor_) return;
    gemms_.clear();
    for (size_t at = 0; at + static_cast<size_t>(batch) <= samples.size(); at += static_cast<size_t>(batch)) {
      std::vector<RecordedGemm>& g = gemms_[samples.data() + at];
      recording_ = &g;
      run(samples.subspan(at, static_cast<size_t>(batch)), train);
      recording_ = nullptr;
      replay_.prepare(g, ps_.dtype(), ex_.options().precision);  // the buffers only grow
    }
  }

  StepStats step(std::span<const InputGraph> batch, bool train) override {
    if (floor_) {
      const auto it = gemms_.find(batch.data());
      SYLVA_CHECK(it != gemms_.end(), "[bench] ", kGemmFloor, ": a minibatch prepare() was not shown");
      const auto t0 = std::chrono::steady_clock::now();
      replay_.run(it->second);
      return {.loss = std::numeric_limits<double>::quiet_NaN(), .compute_s = seconds_since(t0),
              .movement_s = -1.0, .kernels = static_cast<int64_t>(it->second.size())};
    }
    return run(batch, train);
  }

 private:
  StepStats run(std::span<const InputGraph> batch, bool train) {
    StepStats s;
    auto t0 = std::chrono::steady_clock::now();
    GraphBatch gb = GraphBatch::of(batch);
    const double batching = seconds_since(t0);
    const double moved_before = profiler_.category(OpCategory::data_movement).seconds;
    auto t1 = std::chrono::steady_clock::now();
    ex_.forward(gb, train ? Mode::train : Mode::eval);
    s.loss = ex_.scalar(model_.loss);
    if (train) {
      // Only the rows the last backward touched are nonzero in lookup tables.
      if (ex_.param_store().update_side() == Side::device)
        ex_.param_store().zero_grads(first_ ? RowSparsity{} : ex_.sparse_grads());
      else
        ps_.zero_grad(first_ ? nullptr : &ex_.sparse_grads());
      first_ = false;
      ex_.backward(model_.loss);
    }
    const double total = seconds_since(t1);
    s.build_s = batching + ex_.preprocess_seconds();
    s.compute_s = total - ex_.preprocess_seconds();
    s.movement_s = measure_ ? profiler_.category(OpCategory::data_movement).seconds - moved_before : -1.0;
    s.kernels = -1;
    return s;
  }

  ParameterSet& ps_;
  SylvaModel model_;
  Profiler profiler_;  // outlives the executor's observer (declared before ex_)
  Executor ex_;
  std::string name_;
  bool measure_ = false;
  StrategyUpdate update_;
  bool first_ = true;
  // gemm-floor: the GEMMs of each prepared minibatch (keyed by its first sample).
  bool floor_ = false;
  std::map<const InputGraph*, std::vector<RecordedGemm>> gemms_;
  std::vector<RecordedGemm>* recording_ = nullptr;
  GemmReplay replay_;
};

}  // namespace

std::unique_ptr<Strategy> make_sylva_strategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy,
                                              const StrategyOptions& options, bool gemm_floor) {
  return std::make_unique<SylvaStrategy>(cfg, ps, policy, options, gemm_floor);
}

}  // namespace sylva::bench
