// Internal: skipping zero work (Optimisation::skip_zero_work). Per task
// of a schedule: what is absent at every row, which nodes of F and ∂F are
// then zero, and which nodes of ∂F nobody needs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/plan/vertex_plan.h"
#include "sylva/runtime/batch_plan.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/schedule.h"

namespace sylva::detail {

using sylva::Absence;  // sylva/runtime/batch_plan.h: the facts pass plan_absences adds
using sylva::TaskZeros;

/// How a node is handled for a task: run, filled with zeros (its inputs
/// make it zero), or left out (nobody needs its result).
enum class TaskState : uint8_t { run, zero, unneeded };

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
/// The flags of a task with absence `a`, pulled rows all zero or not and
/// (∂F) no pushed gradient or not: from `memo`, or worked out (zero_nodes,
/// unneeded_nodes) and kept there while it has fewer than 16 -- a schedule
/// has few distinct ones (a tree's leaf task and the rest), and working
/// them out walks F and ∂F -- else into `spare`. A function of the plan
/// and the key alone; the reference lasts until the next call.
const TaskZeros& task_zeros(const plan::VertexPlan& vp, const Absence& a, bool pull_zero, bool push_zero,
                            std::vector<TaskZeros>& memo, TaskZeros& spare);
/// Whether every byte of `v` (host memory) is zero.
bool all_zero_bytes(const MatView& v);

}  // namespace sylva::detail
