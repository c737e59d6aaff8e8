// What an Executor's observer is told after each op runs (for profiling).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

#include "sylva/ir/graph.h"

namespace sylva {

/// Where an op ran: in the program's static graph (or its gradient), or
/// inside an apply -- once over many tasks' rows before its task loop
/// (eager batching), per task in the loop, or after the loop (lazy and
/// eager batching of ∂F).
enum class EventPhase : uint8_t { program, before_loop, task_loop, after_loop };

struct OpEvent {
  const ir::Node& node;
  const ir::Graph& graph;
  /// The task's index for phase task_loop; -1 otherwise.
  int64_t task = -1;
  /// Rows the op covered (a task's, a run of tasks', or the batch's).
  int64_t rows = 0;
  std::chrono::nanoseconds elapsed{0};
  /// When the event ran a fused group: its nodes (`node` is the last).
  std::span<const ir::NodeId> fused{};
  EventPhase phase = EventPhase::program;
  /// A ParamGradOut that ran its matmul folded into it (grad += A·B): that
  /// MatMul node; nullptr otherwise.
  const ir::Node* folded_matmul = nullptr;
  /// Floating-point operations of the call (ir::flops of the node, of a
  /// fused group's members, or of the folded matmul).
  int64_t flops = 0;
};
using Observer = std::function<void(const OpEvent&)>;

}  // namespace sylva
