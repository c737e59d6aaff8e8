// The libtorch baselines: each workload written the way a PyTorch user
// writes it, for comparison with Sylva. Declared without any torch type, so
// the driver and the tests compile whether or not libtorch is installed;
// the library (sylva_baselines_torch) exists only where it is, and then
// defines SYLVA_HAVE_TORCH for whoever links it.
//
//   libtorch-recursive  tree-lstm, tree-fc: per sample, a recursion from
//                       the root, one cell call per vertex on [1, ·] rows.
//   libtorch-levels     tree-lstm, tree-fc: the vertices of the minibatch
//                       grouped by height, one batched cell per level,
//                       children's states gathered with index_select (the
//                       manual batching DGL does).
//   libtorch-packed     var-lstm, fixed-lstm: torch::nn::LSTM over a
//                       pack_padded_sequence of the minibatch.
//
// Parameter values are copied from the ParameterSet when the strategy is
// made (so later changes to them are not seen); after a training step the
// gradients are copied back into the ParameterSet, outside the timings.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../strategy.h"

namespace sylva::bench {

/// The libtorch strategies of workload `w`, in a fixed order.
std::vector<std::string> torch_strategy_names(Workload w);

/// The strategy `name` for cfg.workload over the parameters in `ps` (made by
/// add_params), running torch ops on `threads` threads (torch's intra-op
/// pool is process-wide, so the last strategy made sets it). Throws
/// sylva::Error for a name that torch_strategy_names(cfg.workload) lacks.
std::unique_ptr<Strategy> make_torch_strategy(const std::string& name, const ModelConfig& cfg, ParameterSet& ps,
                                              int threads);

}  // namespace sylva::bench
