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

/// Seconds since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace sylva::bench
