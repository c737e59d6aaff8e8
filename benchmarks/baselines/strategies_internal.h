// Internal: the factories behind make_builtin_strategy.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "strategy.h"

namespace sylva::bench {

/// `gemm_floor`: the kGemmFloor strategy (Bfs) instead of Sylva itself.
std::unique_ptr<Strategy> make_sylva_strategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy,
                                              const StrategyOptions& options, bool gemm_floor = false);
/// `dense`: declare Sylva's full cell at every vertex (see dd::ModelDeclarer).
std::unique_ptr<Strategy> make_dynamic_decl_strategy(const ModelConfig& cfg, ParameterSet& ps, bool autobatch,
                                                     bool dense, const StrategyOptions& options);
/// Var-LSTM / Fixed-LSTM only.
std::unique_ptr<Strategy> make_padded_strategy(const ModelConfig& cfg, ParameterSet& ps,
                                               const StrategyOptions& options);

/// The optimiser step of the strategies that run on Sylva's kernels:
/// Sylva's optimiser for StrategyOptions::optimizer, over the ParameterSet
/// on the host, or, where the strategy keeps its parameters on a device
/// (a resident ParamStore), in the device's optimiser kernels as the
/// Trainer runs it there (one download of the gradients' sums of squares,
/// which the optimiser checks for non-finite values). sylva::Error for an
/// unknown optimizer name, and from run() when made with "none".
class StrategyUpdate {
 public:
  StrategyUpdate(const StrategyOptions& options, std::string who);
  /// One step from the gradients in `store`; rows of `sparse` as in Optimizer::step.
  void run(ParamStore& store, const RowSparsity& sparse);

 private:
  std::unique_ptr<Optimizer> opt_;
  std::string who_;
  std::unique_ptr<Buffer> sums_;  // device: per parameter, its gradient's sum of squares
  std::vector<double> host_sums_;
};

/// Seconds since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace sylva::bench
