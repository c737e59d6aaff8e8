// Internal: data movement at a vertex function's boundary, through the row
// tables of a minibatch's BatchPlan. Into F: the pulled rows (from the
// caller's rows or a table), the children's messages (gathers), the pushed
// gradient (∂F's push_grad_in). Out of ∂F: the message gradients back into
// the children's rows, the pull gradient into the caller's rows or table.
// It holds the message gradients; the VertexRunner decides nothing here
// either: it hands each boundary node's value over.
#pragma once

#include <span>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/batch_plan.h"
#include "sylva/runtime/schedule.h"

namespace sylva::detail {

class Boundary {
 public:
  Boundary(const plan::VertexPlan& vp, Backend& backend);

  /// Per minibatch: its plan and schedule, and F's scatter source's arena
  /// (its rows are the messages; null without one); room for the message
  /// gradients.
  void prepare(const BatchPlan& plan, const Schedule& schedule, const DynamicTensor* messages);
  /// forward(): the pull's source ([V, d] in vertex order, or the table
  /// with the plan's pull_rows).
  void start_forward(MatView pull) { pull_ = pull; }
  /// backward(): the pushed gradient (d_pushed_rows: its row per row, or
  /// empty: vertex order) and where the pull gradient goes (a table's
  /// gradient, added at the plan's pull_rows, with `d_pull_table`). Zeroes
  /// the message gradients no gather gradient writes.
  void start_backward(MatView d_pushed, std::span<const int32_t> d_pushed_rows, MatView d_pull, bool d_pull_table);
  /// Whether no row of task t reads a pushed gradient (d_pushed_rows all -1).
  bool no_pushed_grad(const Task& t) const;

  /// The rows of task t of a boundary source (pull, push_grad_in, gather, gather_reduce) into `out`.
  void read(const ir::Node& n, const Task& t, MatView out);
  /// F's concat of gathers read through row windows: each child's rows into its columns of `out`.
  void read_windows(const ir::Graph& g, const ir::Node& concat, const Task& t, MatView out);
  /// ∂F's gradient output `n` (gather_grad_out, gather_reduce_grad_out,
  /// pull_grad_out) for the rows of t, from `value` (n's input), or with
  /// `slice` (row windows) from the columns of the value it slices.
  void write(const ir::Node& n, const Task& t, MatView value, const ir::Node* slice = nullptr);
  /// A gradient output nobody needs in task t: zeros where the rows would
  /// be read stale (written message gradients, the caller's pull rows).
  void leave_out(const ir::Node& n, const Task& t);

  /// What the children scattered, all rows.
  MatView messages() const;
  /// Their gradients, all rows.
  MatView message_grads();
  /// Rows [t.offset, +t.bs) of the message gradients.
  MatView message_grads(const Task& t) { return grads_.rows(t.offset, t.bs); }
  const DynamicTensor& grads() const { return grads_; }

 private:
  void zero_message_grads(std::span<const int32_t> rows);
  std::span<const int32_t> rows(const std::vector<int32_t>& table, const Task& t) const {
    return BatchPlan::rows_in(table, t);
  }

  Backend& backend_;
  const DynamicTensor* messages_ = nullptr;
  DynamicTensor grads_;
  const BatchPlan* plan_ = nullptr;
  const Schedule* schedule_ = nullptr;
  MatView pull_, d_pushed_, d_pull_;
  bool d_pull_table_ = false;
  std::span<const int32_t> d_pushed_rows_;
  std::vector<int32_t> minus_ones_;  // copy_rows source indices for zero rows
};

}  // namespace sylva::detail
