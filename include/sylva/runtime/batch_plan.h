// The plan of one minibatch for one vertex function: everything about the
// minibatch that decides how F and ∂F run over it -- the row tables, what
// each task lacks (skipping zero work), whether message gradients can be
// written rather than added, the children blocks read in place -- as an
// immutable value built before forward() by pure functions from the
// VertexPlan and the Schedule. Each optimisation's facts come from a pass of
// its own (batch plan in, batch plan out); the VertexRunner reads the plan
// and decides none of it. Print it with to_text(); the Executor shows the
// last one of an apply (Executor::batch_plan).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/options.h"
#include "sylva/runtime/schedule.h"

namespace sylva {

/// What a task lacks at every one of its rows (Optimisation::skip_zero_work).
struct Absence {
  uint64_t slots = 0;             ///< bit s: gather slot s has no child (slots 0..63)
  bool no_children = false;       ///< gather_reduce: no row has a child
  bool pull_grad_unused = false;  ///< every row looked up id -1: its pull gradient is unused
  /// Whether gather (reduce) node `n` reads only absent messages.
  bool message_absent(const ir::Node& n) const;
  bool operator==(const Absence&) const = default;
};

/// What the runner and the batch plan read about one graph of a vertex
/// plan (F or ∂F) under the executor's options; every vector by node id.
struct GraphRunFacts {
  std::vector<int32_t> group;         ///< the fused group a node is a member of, else -1
  std::vector<int32_t> inside_group;  ///< the group a member lives inside unseen (not one of its outputs), else -1
  /// Rows that may stay unwritten in a task where the node is known zero
  /// (every reader takes it as zeros without reading rows).
  std::vector<uint8_t> unwritten;
  /// Keeps one task's rows at a time (Optimisation::task_local_values and the plan's mark).
  std::vector<uint8_t> task_local;
};
/// A task's zero nodes of F and ∂F and unneeded nodes of ∂F, and what
/// decides them besides the plan: its absence, whether its pulled rows were
/// all zero, whether no row of it has a pushed gradient (task_zeros).
struct TaskZeros {
  Absence absence;
  bool pull_zero = false, push_zero = false;
  std::vector<uint8_t> zero_f, zero_b, unneeded;
};
/// Both graphs' facts, and the options they were worked out under.
struct RunFacts {
  GraphRunFacts forward, backward;
  bool skip_zero_work = false, trim_fused_zeros = false;
  bool row_windows = false;  ///< the plan's row windows are used (the option, and the backend has them)
  /// Lent arenas (Optimisation::lend_forward_arenas), per node of ∂F: the
  /// node of F whose arena holds its rows (kNoNode: its own). Pairs are
  /// fixed once per runner; a lender's arena is sized for the larger of the two.
  std::vector<ir::NodeId> lender;
  /// Memo of plan_task_local_rows: the flags of each distinct absence seen
  /// (at most 16), kept across minibatches. They are a function of the plan
  /// alone, so keeping them changes no result; a RunFacts is used by one
  /// thread at a time (its runner's executor).
  mutable std::vector<TaskZeros> memo;
};
/// The facts of `vp` under `on` (`row_windows`: the backend has them). Built
/// once per runner.
RunFacts run_facts(const plan::VertexPlan& vp, Optimisations on, bool row_windows);
/// Whether a fused group leaves its output `i` of graph `g` unwritten in a
/// task with these zero / unneeded flags (trim_fused_zeros).
bool output_unused(const RunFacts& facts, const GraphRunFacts& g, bool backward, size_t i,
                   std::span<const uint8_t> zero, std::span<const uint8_t> unneeded);
/// Whether node i of graph `p` (facts `g`) has arena rows of its own while
/// p runs: an arena value, not read through a row window, not hidden inside
/// a fused group.
bool has_rows(const RunFacts& facts, const plan::GraphPlan& p, const GraphRunFacts& g, size_t i);
/// Whether a node that is known zero in a task skips its kernel: every op
/// with a value of its own but the boundary ops other than a gather and the
/// pushed gradient.
bool skips_when_zero(const ir::Node& n, plan::Home h);

struct BatchPlan {
  int64_t rows = 0;       ///< rows of the minibatch (its vertices, in task order)
  int64_t task_rows = 0;  ///< rows of its largest task
  std::vector<Task> tasks;
  /// Per gather slot, per row: the row of the child in that slot (-1: none).
  std::vector<std::vector<int32_t>> child_rows;
  /// gather_reduce: row r's children are reduce_src[reduce_offsets[r] ..
  /// reduce_offsets[r + 1]) (rows), reduce_dst the row of each; empty
  /// without gather_reduce.
  std::vector<int32_t> reduce_offsets, reduce_src, reduce_dst;
  /// Pulls from the table: per row, the table row it pulls (-1: zeros);
  /// empty otherwise.
  std::vector<int32_t> pull_rows;

  /// Pass plan_absences: per task, what it lacks at every row.
  std::vector<Absence> absence;
  /// Pass plan_message_writes: every row's message gradient has at most
  /// one writer (trees, chains), so the gather gradients write rather than
  /// add, and only `unwritten_rows` (no writer: roots) are zeroed.
  bool write_message_grads = false;
  std::vector<int32_t> unwritten_rows;
  /// Pass plan_children_blocks (Optimisation::children_in_place): every
  /// task has its children in consecutive rows in slot order, or none.
  struct Children {
    bool in_place = false;
    plan::VertexPlan::ChildrenBlock nodes;  ///< the concat and gradient read in place (VertexPlan::children_block)
    std::vector<int32_t> first_child;  ///< per row: its first child's row (-1: none)
    std::vector<int32_t> blocked;      ///< prefix counts of the rows with children in place [rows + 1]
    int64_t concat_rows = 0;           ///< rows F's concat still keeps: up to the last task without children
    bool operator==(const Children&) const = default;
  } children;

  /// Pass plan_task_local_rows (Optimisation::task_local_values with
  /// skip_zero_work): per node of F and of ∂F, the rows a task-local value
  /// needs -- those of the largest task whose loop writes it (0: none
  /// does), assuming every fused group runs fused; empty without the pass
  /// (every task-local value then gets task_rows).
  std::vector<int64_t> task_local_rows_f, task_local_rows_b;

  /// The rows of task t in a per-row table (child_rows[s], pull_rows).
  static std::span<const int32_t> rows_in(const std::vector<int32_t>& table, const Task& t) {
    return {table.data() + t.offset, static_cast<size_t>(t.bs)};
  }
  /// A summary: rows, tasks and each pass's facts (a line per task).
  std::string to_text() const;
  /// Every table and fact equal.
  bool operator==(const BatchPlan&) const = default;
};

/// The base plan: the row tables of `schedule` for `vp`'s gathers and pull.
/// Checks that no vertex has more children than F reads (sylva::Error
/// naming it). `pull_ids` (vertex order, may be empty): the pulled lookup's
/// ids; with `pull_from_table`, pull_rows maps each row to its table row.
/// `storage`: an earlier plan whose tables' memory the new one reuses
/// (none of its facts are kept), so a steady run allocates none.
BatchPlan plan_rows(const plan::VertexPlan& vp, const GraphBatch& batch, const Schedule& schedule,
                    std::span<const int32_t> pull_ids, bool pull_from_table, BatchPlan storage = {});
/// Adds each task's Absence (pull_ids as for plan_rows).
BatchPlan plan_absences(BatchPlan p, const Schedule& schedule, std::span<const int32_t> pull_ids);
/// Adds write_message_grads and unwritten_rows for `vp`'s ∂F.
BatchPlan plan_message_writes(BatchPlan p, const plan::VertexPlan& vp);
/// Adds the children blocks of `vp`'s children_block (after
/// plan_message_writes): in place only where every task has its children in
/// order or none, and the message gradients are written.
BatchPlan plan_children_blocks(BatchPlan p, const plan::VertexPlan& vp);

/// Adds task_local_rows_f/_b: each task's zero and unneeded nodes worked
/// out from its Absence (pulled rows and pushed gradients taken as nonzero:
/// they are not known yet, and more zeros only mean fewer writes), and each
/// task-local value given the rows of the largest task that writes it.
BatchPlan plan_task_local_rows(BatchPlan p, const plan::VertexPlan& vp, const RunFacts& facts);

/// What build_batch_plan needs besides the plans.
struct BatchPlanInputs {
  const GraphBatch& batch;
  const Schedule& schedule;
  std::span<const int32_t> pull_ids = {};
  bool pull_from_table = false;
  /// The backend uses the plan's row windows (Optimisation::row_windows and Backend::has_row_windows()).
  bool row_windows = false;
  /// The runner's facts (run_facts): with them, task-local sizes are planned too.
  const RunFacts* facts = nullptr;
};
/// Every pass the optimisations call for, in order (`storage` as for plan_rows).
BatchPlan build_batch_plan(const plan::VertexPlan& vp, const BatchPlanInputs& in, Optimisations on,
                           BatchPlan storage = {});

}  // namespace sylva
