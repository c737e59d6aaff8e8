// IOS: the inter-operator scheduler of Ding et al. (MLSys 2021). A dynamic
// program over the sets of operators still to schedule picks a sequence of
// stages; each stage runs its operators either concurrently (groups on
// parallel threads or streams, each group sequential) or merged into one
// operator. Works on any op DAG of up to 64 operators (larger graphs are
// cut into blocks first, see split_blocks) with a StageCostModel.
//
// @code
// ios::OpDag dag(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});  // a diamond
// MyCostModel cost;                                      // measures or estimates stages
// ios::StagePlan plan = ios::schedule(dag, cost, {.variant = ios::Variant::both, .r = 3, .s = 8});
// for (const ios::Stage& st : plan.stages) ...           // in execution order
// @endcode
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sylva::ios {

/// A set of operators of one OpDag: bit i is operator i.
using OpSet = uint64_t;

/// A DAG of at most 64 operators, given by its edges (from, to): `to`
/// reads `from`'s result. sylva::Error on a cycle, a self-loop, an
/// operator id out of range or more than 64 operators.
class OpDag {
 public:
  OpDag(int n, const std::vector<std::pair<int, int>>& edges);
  int size() const { return n_; }
  OpSet all() const { return n_ == 64 ? ~OpSet{0} : (OpSet{1} << n_) - 1; }
  OpSet preds(int v) const { return preds_[static_cast<size_t>(v)]; }
  OpSet succs(int v) const { return succs_[static_cast<size_t>(v)]; }
  /// Operators reachable from v (v excluded).
  OpSet descendants(int v) const { return desc_[static_cast<size_t>(v)]; }
  /// A topological order (ties by id).
  const std::vector<int>& topo_order() const { return topo_; }

 private:
  int n_;
  std::vector<OpSet> preds_, succs_, desc_;
  std::vector<int> topo_;
};

/// One stage: concurrent groups (each group's operators run in
/// topological order on one thread/stream), or one merged operator.
struct Stage {
  enum class Kind : uint8_t { concurrent, merged };
  Kind kind = Kind::concurrent;
  std::vector<OpSet> groups;  // merged: one group
  OpSet ops() const;
};

/// Latency of stages, measured on a backend or computed by a model.
class StageCostModel {
 public:
  virtual ~StageCostModel() = default;
  virtual double latency(const OpDag& dag, const Stage& stage) = 0;
  /// Whether `ops` (pairwise independent) can run as one merged operator
  /// (e.g. matmuls or convolutions sharing their input).
  virtual bool mergeable(const OpDag& dag, OpSet ops) = 0;
};

/// Sequential: one operator per stage. Greedy: each stage is every
/// operator whose inputs are ready, concurrently (no search). Merge,
/// Parallel, Both: IOS with merged stages, with concurrent stages, or with
/// both.
enum class Variant : uint8_t { sequential, greedy, merge, parallel, both };
const char* variant_name(Variant v);

struct Options {
  Variant variant = Variant::both;
  int r = 0;  // at most r operators per group (0: no limit)
  int s = 0;  // at most s groups per stage (0: no limit)
};

struct StagePlan {
  std::vector<Stage> stages;  // in execution order
  double cost = 0.0;          // the sum of the stages' latencies
  int64_t states = 0;         // DP states (sets of unscheduled operators) visited
  int64_t stages_costed = 0;  // latency() calls
};

/// The stages of an optimal plan for `dag` under `cost` and `options`.
StagePlan schedule(const OpDag& dag, StageCostModel& cost, const Options& options = {});

/// The `k` cheapest distinct plans under `cost` (fewer if there are not
/// that many), cheapest first; the first is schedule()'s. Greedy has one.
/// `states` and `stages_costed` are the whole search's.
std::vector<StagePlan> schedule_best(const OpDag& dag, StageCostModel& cost, const Options& options, int k);

/// The measured final choice between candidates 0..n-1 (plans, or
/// anything else that runs): `run(k)` runs candidate k once and returns
/// its seconds. After a warm-up round, `rounds` rounds run every candidate
/// once each, in turn, so drifting load on a shared machine hits them
/// alike; the candidate with the lowest median wins.
struct Contest {
  size_t best = 0;
  std::vector<std::vector<double>> seconds;  // per candidate, its timed runs
  double spent_s = 0;                         // wall time of the whole contest, warm-up included
  double median(size_t k) const;
  double min(size_t k) const;
  double max(size_t k) const;
};
Contest fastest(size_t n, int rounds, const std::function<double(size_t)>& run);

/// The endings of `remaining` (a predecessor-closed set): every non-empty
/// subset with no edge from it to the rest of `remaining`, in increasing
/// order. Enumerated as IOS does, by a cut per chain of a chain
/// decomposition, each cut closed under descendants (overlapping groups
/// unite); `max_group` > 0 keeps only endings whose connected components
/// have at most that many operators (pruning r).
std::vector<OpSet> endings(const OpDag& dag, OpSet remaining, int max_group = 0);

/// The weakly connected components of `ops` (the groups of a concurrent stage).
std::vector<OpSet> components(const OpDag& dag, OpSet ops);

/// Whether `plan` runs every operator once, after its inputs.
bool valid_plan(const OpDag& dag, const StagePlan& plan, std::string* why = nullptr);

}  // namespace sylva::ios
