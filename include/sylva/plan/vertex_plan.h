// The plan of a vertex function, as a value: F and ∂F after IOS and
// matmul folding, where each node's value lives, which nodes run before,
// inside and after the task loop (eager and lazy batching), and which run
// fused. Built once per (F, options) by build_vertex_plan and never
// changed; the runtime only executes it (src/runtime/vertex_runner.cc).
//
// @code
// plan::PlanOptions o{.fusion = true, .ios = ios::Options{.variant = ios::Variant::both, .r = 3, .s = 8}};
// std::shared_ptr<const plan::VertexPlan> p = plan::build_vertex_plan(f.graph(), o);
// std::cout << p->to_text();           // every node: home, phase, fused group
// p->backward.fused.size();            // fused groups of ∂F
// @endcode
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sylva/ir/fused.h"
#include "sylva/ir/graph.h"
#include "sylva/sched/ios.h"

namespace sylva::plan {

/// What is planned. Eager/lazy batching and fusion as the ExecutorOptions
/// of the same names say; `ios`: F and ∂F re-emitted in their IOS plan's
/// order with mergeable matmuls merged (Optimisation::ios).
struct PlanOptions {
  bool eager_batching = true;
  bool lazy_param_grads = true;
  bool fusion = true;
  std::optional<ios::Options> ios = std::nullopt;
  /// The program's plans only (Optimisation::direct_row_selection):
  /// rows selected from a vertex function's output come straight from its
  /// rows, and their gradients go straight back into them.
  bool direct_row_selection = true;
  /// The program's plans only (Optimisation::pull_from_table): a
  /// lookup read only by a vertex function's pull is not laid out; the
  /// pull reads the table's rows, and its gradient goes into the table's.
  bool pull_from_table = true;
  /// Where F pushes a column block of the message it scatters (a Tree-LSTM
  /// pushes h and scatters [h; c]) and ∂F does not read the pushed value,
  /// the value is not kept beside the message: the push reads the
  /// message's columns (VertexPlan::push_col). Needs a backend with row
  /// windows: the executor sets it to Optimisation::row_windows &&
  /// Backend::has_row_windows().
  bool push_from_message = true;
  /// A key that orders options (the cache's; the vertex plans' options only).
  std::vector<int> key() const;
};

/// Where a node's value lives while the plan runs: a dynamic tensor with a
/// row per vertex (arena), one fixed-size buffer (fixed), the parameter
/// store (param), F's value of node attrs.ref (forward), the accumulated
/// message gradient (scatter_grad), or nowhere (markers and gradient outputs).
enum class Home : uint8_t { arena, fixed, param, forward, scatter_grad, none };
/// When a node runs: once over all rows before the task loop (eager), per
/// task, or once over all rows after it (lazy).
enum class Phase : uint8_t { pre, loop, post };
const char* home_name(Home h);
const char* phase_name(Phase p);

/// A fused group: its member nodes in order, the values it reads from
/// outside (in[k] of the program's external input -1 - k) and the members
/// written out (out[k]: read outside the group, or by ∂F).
struct FusedGroup {
  std::vector<ir::NodeId> members, inputs, outputs;
  ir::FusedProgram program;
};

/// The plan of one graph (F or ∂F); every vector is indexed by node id.
struct GraphPlan {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<Home> home;
  std::vector<Phase> phase;
  /// The nodes that run before and after the task loop, in order.
  std::vector<ir::NodeId> pre, post;
  std::vector<FusedGroup> fused;
  /// What the task loop runs for each task: node ids, or -1 - g for fused group g.
  std::vector<int32_t> order;
  /// ∂F: matmuls run as grad += A·B at their ParamGradOut (all false for F).
  std::vector<uint8_t> folded;
  /// The nodes reading each node.
  std::vector<std::vector<ir::NodeId>> consumers;
  /// Row windows, used where the backend has_row_windows(): window[n] is 1
  /// for a concat of gathers that copies the children's rows straight into
  /// its columns (F) and for a gather gradient that adds its slice's columns
  /// straight from the sliced value (∂F); in_window[n] is 1 for the gathers
  /// and slices those nodes read through, which then do not run.
  std::vector<uint8_t> window, in_window;
  /// Task-local values: task_local[n] is 1 for a value of the task loop that
  /// only nodes of the same task read (not ∂F, not a parent's gather, not
  /// the push or the work before or after the loop). It needs rows for one
  /// task at a time, not a row per vertex of the minibatch; the runtime then
  /// keeps it in one task-sized block (Optimisation::task_local_values).
  std::vector<uint8_t> task_local;

  /// Whether node `id` computes a value in the plan's phases (arena, fixed or none).
  bool runs(ir::NodeId id) const;
};

/// F and ∂F planned together (F's fused groups write out what ∂F reads).
struct VertexPlan {
  PlanOptions options;
  GraphPlan forward, backward;
  /// The node whose value F scatters to its parent (kNoNode if none).
  ir::NodeId scatter_source = ir::kNoNode;
  /// The node whose value F pushes (its output row).
  ir::NodeId push_source = ir::kNoNode;
  /// >= 0 (PlanOptions::push_from_message): push_source is the columns
  /// [push_col, push_col + its width) of scatter_source and is not kept
  /// on its own; the pushed rows are read from the message's.
  int64_t push_col = -1;
  /// F's pull node (kNoNode if F pulls nothing).
  ir::NodeId pull = ir::kNoNode;
  /// Gather slots F reads (1 + the highest), and whether it reads gather_reduce.
  int64_t gather_slots = 0;
  bool gathers_all = false;
  /// The slot of every gather gradient ∂F runs (one per GatherGradOut node),
  /// for the batch plan's message writes.
  std::vector<int64_t> gather_grad_slots;
  /// F's concat of gather(0) .. gather(S-1) in slot order (each a message
  /// wide, a row window) and ∂F's value whose slices are the row-window
  /// gather gradients of each slot once: what children_in_place reads as
  /// views of the children's rows where a batch has them in order.
  /// kNoNode where F has none; a concat with grad kNoNode is not read in
  /// place (and is not a lent arena's lender).
  struct ChildrenBlock {
    ir::NodeId concat = ir::kNoNode, grad = ir::kNoNode;
    bool operator==(const ChildrenBlock&) const = default;
  } children_block;

  /// One line per node: id, op, home, phase, fused group (and folded in ∂F).
  std::string to_text() const;
  /// Graphviz of F and ∂F, each node labelled with its phase; fused groups as clusters.
  std::string to_dot() const;
};

/// Checks that `f` is a vertex function the runtime can run (each vertex
/// computed independently, messages gathered only where one is scattered,
/// no input_ids), derives ∂F, applies IOS when asked, folds ∂F's parameter
/// matmuls and plans phases and fusion. sylva::Error naming F and the node
/// when F is not valid.
std::shared_ptr<const VertexPlan> build_vertex_plan(std::shared_ptr<const ir::Graph> f, const PlanOptions& options);

/// Plans keyed by (F, options): one plan per vertex function and option
/// set, shared by every apply of that F. Thread-safe.
class PlanCache {
 public:
  std::shared_ptr<const VertexPlan> get(const std::shared_ptr<const ir::Graph>& f, const PlanOptions& options);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<const ir::Graph*, std::vector<int>>, std::shared_ptr<const VertexPlan>> plans_;
  std::vector<std::shared_ptr<const ir::Graph>> keep_;  // the keys' graphs stay alive
};

}  // namespace sylva::plan
