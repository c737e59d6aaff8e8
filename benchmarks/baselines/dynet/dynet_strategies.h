// The real DyNet (clab/dynet, built from ../shared/peers by its
// build_dynet.sh) as a benchmark strategy: each workload written the way a
// DyNet user writes it, one ComputationGraph per minibatch, one expression
// per op per vertex, pickneglogsoftmax per labelled vertex, one sum of the
// losses, forward / backward / Trainer::update.
//
//   dynet            the graph executed node by node
//   dynet-autobatch  DyNet's agenda-based autobatching (--dynet-autobatch 1)
//
// Workloads:
//   tree-lstm  recursion from the leaves; leaves declare the word terms,
//              internal vertices the child terms (no zero terms). The tai
//              cell stacks its five gates in one matrix as Sylva's model
//              does; the dynet cell is the DyNet benchmarks' treenn cell,
//              one matrix per gate (Wi, Wo, Wu, Ui, Uo, Uu, UF1, UF2).
//   tree-fc    h = rectify(affine_transform({b, W, [h_l; h_r]}) + x).
//   var-lstm,  VanillaLSTMBuilder (forget_bias 0, Sylva's gate order i, f,
//   fixed-lstm o, u), one start_new_sequence() per sentence.
//
// Parameter values are copied from the ParameterSet (f32 only: DyNet's CPU
// build computes in float) when the strategy is made, rearranged where
// DyNet's layout differs (a Sylva [in, out] row-major matrix is a DyNet
// {out, in} column-major one byte for byte). Unlike the other strategies,
// step() leaves the gradients in DyNet's own storage, so a wall clock
// around step() times DyNet's own work; copy_gradients() copies them into
// a ParameterSet (the tests do). update() runs DyNet's trainer (Adam with
// dense updates, Adagrad and SGD with sparse ones, as Sylva's optimisers
// update; clipping off) with StrategyOptions::optimizer and lr.
//
// Declared without any DyNet type, so the driver and tests compile whether
// or not DyNet was found; the library (sylva_baselines_dynet) exists only
// where it was, and then defines SYLVA_HAVE_DYNET for whoever links it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../strategy.h"

namespace sylva::bench {

/// The DyNet strategies of workload `w`: {"dynet", "dynet-autobatch"}.
std::vector<std::string> dynet_strategy_names(Workload w);

/// Initialises DyNet for this process (once): `mem_mb` megabytes of memory
/// pools (DyNet splits them in four and, under autobatching, aborts when
/// one runs out), random seed `seed`. A second call with other values
/// throws sylva::Error; make_dynet_strategy calls it with 1024 MB if
/// nothing did before.
void init_dynet(int mem_mb, uint64_t seed);

class DynetStrategy : public Strategy {
 public:
  /// Copies d(loss)/d(param) of the last step() into `ps`'s gradients
  /// (the ParameterSet the strategy was made from, or one with the same
  /// parameters).
  virtual void copy_gradients(ParameterSet& ps) const = 0;
};

/// The strategy `name` for cfg.workload over the parameters in `ps` (made by
/// add_params). Throws sylva::Error for a name dynet_strategy_names lacks,
/// a dtype other than f32, a device other than the CPU, and more than one
/// thread (DyNet's CPU build runs on one).
std::unique_ptr<DynetStrategy> make_dynet_strategy(const std::string& name, const ModelConfig& cfg,
                                                   ParameterSet& ps, const StrategyOptions& options);

}  // namespace sylva::bench
