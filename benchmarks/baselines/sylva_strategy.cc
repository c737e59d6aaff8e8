// Sylva itself: the example models run by the Executor (Bfs or Serial).
#include <optional>

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
  SylvaStrategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy, const StrategyOptions& o)
      : ps_(ps), model_(ps, cfg), ex_(*model_.program, ps, with_policy(o.executor, policy)),
        name_(policy == BatchingPolicy::Bfs ? "sylva" : "sylva-serial"), measure_(o.measure_movement),
        update_(o, name_) {
    if (measure_) ex_.set_observer(profiler_.observer());
    // On a device the parameters stay there and gradients are zeroed there, as
    // the Trainer does with its optimiser on the device (the baselines likewise).
    if (!ex_.param_store().on_host()) ex_.param_store().set_resident(true);
  }

  std::string name() const override { return name_; }

  void update() override { update_.run(ex_.param_store(), ex_.sparse_grads()); }
  void synchronize() override { ex_.backend().synchronize(); }
  void download_parameters() override {
    if (ex_.param_store().resident()) ex_.param_store().download_values();
  }
  double values_mb() const override { return static_cast<double>(ex_.held_bytes()) / (1 << 20); }

  StepStats step(std::span<const InputGraph> batch, bool train) override {
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
      if (ex_.param_store().resident())
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

 private:
  ParameterSet& ps_;
  SylvaModel model_;
  Profiler profiler_;  // outlives the executor's observer (declared before ex_)
  Executor ex_;
  std::string name_;
  bool measure_ = false;
  StrategyUpdate update_;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<Strategy> make_sylva_strategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy,
                                              const StrategyOptions& options) {
  return std::make_unique<SylvaStrategy>(cfg, ps, policy, options);
}

}  // namespace sylva::bench
