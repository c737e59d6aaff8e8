// Internal: the factories behind make_builtin_strategy.
#pragma once

#include "strategy.h"

namespace sylva::bench {

std::unique_ptr<Strategy> make_sylva_strategy(const ModelConfig& cfg, ParameterSet& ps, BatchingPolicy policy,
                                              const StrategyOptions& options);
/// `dense`: declare Sylva's full cell at every vertex (see dd::ModelDeclarer).
std::unique_ptr<Strategy> make_dynamic_decl_strategy(const ModelConfig& cfg, ParameterSet& ps, bool autobatch,
                                                     bool dense, const StrategyOptions& options);
/// Var-LSTM / Fixed-LSTM only.
std::unique_ptr<Strategy> make_padded_strategy(const ModelConfig& cfg, ParameterSet& ps,
                                               const StrategyOptions& options);

/// Sylva's optimiser for options.optimizer (null for "none"), used by the
/// strategies that run on Sylva's kernels; sylva::Error for an unknown name
/// or a device (the update runs on the host's ParameterSet).
std::unique_ptr<Optimizer> make_strategy_optimizer(const StrategyOptions& options, const std::string& who);

/// One host optimiser step over `ps` (sylva::Error when `opt` is null).
void host_update(Optimizer* opt, ParameterSet& ps, const RowSparsity& sparse, const std::string& who);

/// Seconds since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace sylva::bench
