// IOS on Sylva's own graphs: a vertex function F, its gradient ∂F or a
// program's static graph. The operators the DP schedules are the graph's
// GEMMs (matmuls); every other node (elementwise math, slices, concats,
// which fusion runs as one pass anyway) is emitted as soon as an operator
// or the graph's end needs it. Scheduling every node, as IOS does with the
// convolutions of a CNN, made the DP's states explode on F and ∂F (wide,
// with dozens of cheap independent nodes): seconds per graph. IOS's merge
// rule for matmuls (the same left operand, fixed right operands) turns
// gate matmuls written one per gate into one matmul over concatenated
// weights; the graph is then re-emitted in the plan's order, which is the
// order the executor runs it in.
//
// @code
// ios::PlannedGraph p = ios::plan_graph(*f, {.variant = ios::Variant::both, .r = 3, .s = 8});
// p.graph;          // F again, gate matmuls that share an input merged, in the plan's order
// p.merged_stages;  // how many merges the DP chose
// @endcode
#pragma once

#include <vector>

#include "sylva/ir/graph.h"
#include "sylva/sched/ios.h"

namespace sylva::ios {

/// The operators of `g` IOS schedules (its matmuls; in a static graph also
/// the applies of vertex functions and their gradients), in id order, cut into
/// parts of at most `max_ops` consecutive operators (so no edge runs from a
/// later part to an earlier). An edge u -> v: v reads u's result, directly
/// or through other nodes.
struct IrPart {
  std::vector<ir::NodeId> nodes;
  OpDag dag;
};
std::vector<IrPart> ir_parts(const ir::Graph& g, int max_ops = 12);

/// IOS's merge rule for matmuls: two or more matmuls without transposes
/// that read the same left operand, whose right operands are fixed values
/// (parameters, or values of parameters only) -- one matmul over the right
/// operands concatenated along columns computes them all.
bool matmuls_mergeable(const ir::Graph& g, const std::vector<ir::NodeId>& nodes);

/// Analytical stage latency for the CPU executor, with `rows` rows per
/// rowed value (a typical task): a matmul costs a call overhead plus its
/// flops at a rate that grows with its output columns (narrow GEMMs run
/// below peak); any other op an overhead plus its elements. The executor
/// runs the groups of a concurrent stage one after another (each op already
/// uses the GEMM threads), so a stage costs the sum of its operators (an
/// apply counts a fixed 1 ms stand-in); a
/// merged stage is one matmul over the summed columns plus a slice per
/// member (the concatenated weights are built once per minibatch, outside
/// the task loop, and not counted).
class IrCostModel final : public StageCostModel {
 public:
  IrCostModel(const ir::Graph& g, const IrPart& part, int64_t rows = 64) : g_(g), part_(part), rows_(rows) {}
  double latency(const OpDag& dag, const Stage& stage) override;
  bool mergeable(const OpDag& dag, OpSet ops) override;
  /// The model's time of one node (seconds).
  double op_time(ir::NodeId id) const;

 private:
  double matmul_time(int64_t m, int64_t k, int64_t n) const;
  const ir::Graph& g_;
  const IrPart& part_;
  int64_t rows_;
};

/// `g` re-emitted as `plans` (one per part of `parts`) say: sources first,
/// then stage by stage, each group's operators in order, each after the
/// nodes it reads; last, the nodes no operator reads. A merged stage of
/// matmuls becomes concat(W1, ..., Wk) (a fixed value: the executor computes
/// it once per minibatch), one matmul, and a column slice per member that
/// the member's consumers read. When W1..Wk are the consecutive column
/// slices of one value W that they cover (a cell written gate by gate over
/// a stacked weight), the matmul reads W itself. With `slice_param_grads` (for gradient
/// graphs) a slice of a row-reducing matmul's result, Slice(Aᵀ·B), is
/// emitted as Aᵀ·Slice(B), so each parameter gradient of a merged matmul is
/// again one product straight into its gradient (lazy batching keeps it out
/// of the task loop).
/// `emitted_as`, if given, receives the id each node of `g` got (a merged
/// member: its slice; a row-reducing product read through slices: none).
ir::Graph follow_plans(const ir::Graph& g, const std::vector<IrPart>& parts, const std::vector<StagePlan>& plans,
                       bool slice_param_grads = false, std::vector<ir::NodeId>* emitted_as = nullptr);

/// What plan_graph did.
struct PlannedGraph {
  ir::Graph graph;
  int merged_stages = 0;      // merged stages (each one matmul now)
  int concurrent_stages = 0;  // stages of two or more groups
  int64_t states = 0, stages_costed = 0;
};

/// ir_parts, schedule each part under IrCostModel, follow_plans.
PlannedGraph plan_graph(const ir::Graph& g, const Options& options, bool slice_param_grads = false,
                        int64_t rows = 64);

/// The order in which the plan runs the nodes of `g`, without merges (a
/// program's static graph: its nodes are the user's Symbols, so they are
/// reordered, never rewritten). IOS-Both plans as IOS-Parallel, IOS-Merge
/// as Sequential.
std::vector<ir::NodeId> plan_order(const ir::Graph& g, Options options, int64_t rows = 64);

}  // namespace sylva::ios
