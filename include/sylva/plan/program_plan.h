// The plan of a program's static graph and of its gradient, as values:
// the order its nodes run in (IOS's, or as written) and, for the gradient,
// which nodes fold into their parameter's gradient.
//
// @code
// plan::ProgramPlan fwd = plan::plan_program(program.graph(), options);
// plan::ProgramGradPlan bwd = plan::plan_program_gradient(program.graph(), loss.id(), options);
// for (ir::NodeId id : bwd.order) if (!bwd.folded[id]) { /* run node id of *bwd.graph */ }
// @endcode
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sylva/plan/vertex_plan.h"

namespace sylva::plan {

/// The static graph: the order its nodes run in -- the IOS plan's with
/// options.ios (reordered, never merged: the nodes are the user's
/// Symbols), else as written.
struct ProgramPlan {
  std::vector<ir::NodeId> order;
  /// Per node: an apply whose every consumer is a select_rows of it
  /// (options.direct_row_selection). Its output is not laid out in vertex
  /// order: the selections copy their rows straight from the vertex
  /// function's rows (the whole output only when someone asks for it).
  std::vector<uint8_t> selected_in_place;
  /// Per node: a lookup of a parameter by input_ids that only a vertex
  /// function's pull reads (options.pull_from_table). It is not laid out:
  /// the pull copies its rows straight from the table (the lookup's value
  /// only when someone asks for it).
  std::vector<uint8_t> pulled_in_place;
  /// One line per node of `program`, in run order: position, id, op.
  std::string to_text(const ir::Graph& program) const;
};
ProgramPlan plan_program(const ir::Graph& program, const PlanOptions& options);

/// A program gradient plus the nodes folded into their consumer: lookup
/// gradients become sparse row updates of their table (never a dense
/// [n, d]); parameter-gradient matmuls accumulate into the gradient; with
/// options.direct_row_selection, a row selection's gradient (ScatterRows)
/// read only by a vertex function's gradient goes straight into its rows
/// (never a dense [vertices, d] of zeros and the selected rows).
struct ProgramGradPlan {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<ir::NodeId> order;
  std::vector<uint8_t> folded;
  /// Parameters whose whole gradient is one lookup's: updated row by row.
  std::set<std::string> sparse_params;
  /// Per node: an ApplyGrad whose pull gradient goes straight into its
  /// table's gradient rows (options.pull_from_table; the pull read a lookup
  /// in place and that table is in sparse_params). The lookup's gradient
  /// is folded; its ParamGradOut only records the rows.
  std::vector<uint8_t> pull_grad_in_place;
  /// Per position of `order`: the parameters whose gradient is final once
  /// that node ran (its last writer: a ParamGradOut, or the ApplyGrad of a
  /// vertex function reading it), each named once. A parameter named
  /// nowhere gets no gradient from this loss.
  std::vector<std::vector<std::string>> final_after;
  /// One line per node of the gradient graph, in run order (folded ones marked).
  std::string to_text() const;
};
ProgramGradPlan plan_program_gradient(const ir::Graph& program, ir::NodeId loss, const PlanOptions& options);

}  // namespace sylva::plan
