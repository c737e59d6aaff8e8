// Internal: skipping zero work (Optimisation::skip_zero_work). Per task
// of a schedule: what is absent at every row, which nodes of F and ∂F are
// then zero, and which nodes of ∂F nobody needs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/schedule.h"

namespace sylva::detail {

/// What a task lacks at every one of its rows.
struct Absence {
  uint64_t slots = 0;             ///< bit s: gather slot s has no child (slots 0..63)
  bool no_children = false;       ///< gather_reduce: no row has a child
  bool pull_grad_unused = false;  ///< every row looked up id -1: its pull gradient is unused
  /// Whether gather (reduce) node `n` reads only absent messages.
  bool message_absent(const ir::Node& n) const;
};

/// How a node is handled for a task: run, filled with zeros (its inputs
/// make it zero), or left out (nobody needs its result).
enum class TaskState : uint8_t { run, zero, unneeded };

/// Per task of `schedule`: what is absent. `child_rows[s][r]`: row r's
/// child in gather slot s (-1: none); `reduce_offsets` (empty without
/// gather_reduce): row r's children span; `pull_ids` (vertex order, may be
/// empty): the pulled lookup's ids.
std::vector<Absence> task_absence(const Schedule& schedule, const std::vector<std::vector<int32_t>>& child_rows,
                                  const std::vector<int32_t>& reduce_offsets, std::span<const int32_t> pull_ids);

/// zero[n] for every node of `p` (F or ∂F) given the task's absence,
/// whether its pulled block was all zero and (for ∂F) F's zero flags and
/// whether no row of the task has a pushed gradient.
void zero_nodes(const plan::GraphPlan& p, const Absence& a, bool pull_zero, std::span<const uint8_t> zero_f,
                std::vector<uint8_t>& zero, bool push_zero = false);
/// Per node of `p`: whether its rows may stay unwritten in a task where it
/// is known zero. Every reader, in `p` and (for F) through ∂F's forward
/// values (`backward`), is a fused group of the task loop that takes it as
/// an input (VertexRunner::run_group hands such a group one row of zeros
/// instead), a member of its own fused group (which computes the step and
/// reads no rows; the group then leaves the output unwritten,
/// VertexRunner::output_unused) or a product that is then zero too and
/// does not run; and it is none of `kept` (the messages and the pushed
/// rows: read from outside F).
std::vector<uint8_t> unwritten_zero_nodes(const plan::GraphPlan& p, const plan::GraphPlan* backward,
                                          std::span<const ir::NodeId> kept);
/// ∂F nodes of a task whose result nobody needs: gradients for absent
/// children or unused pull rows, zero parameter gradients, and everything
/// that only feeds those.
void unneeded_nodes(const plan::GraphPlan& backward, const Absence& a, std::span<const uint8_t> zero_b,
                    std::vector<uint8_t>& unneeded);
/// Whether every byte of `v` (host memory) is zero.
bool all_zero_bytes(const MatView& v);

}  // namespace sylva::detail
