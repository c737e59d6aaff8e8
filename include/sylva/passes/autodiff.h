// Symbolic differentiation of vertex functions and programs, in the same IR.
#pragma once

#include <memory>
#include <span>

#include "sylva/ir/graph.h"

namespace sylva::passes {

/// ∂F of a vertex function F. The result (GraphKind::vertex_gradient)
/// reads forward values through ForwardValue nodes (attrs.ref = node of F),
/// the gradient of the pushed row through PushGradIn and the gradient of
/// the scattered message through ScatterGradIn, and writes its results
/// through the duals of F's boundary: gather -> GatherGradOut (scatter-add
/// into the child's message gradient), gather_reduce ->
/// GatherReduceGradOut, pull -> PullGradOut, param -> ParamGradOut.
/// Dead nodes are removed.
std::shared_ptr<const ir::Graph> differentiate_vertex_function(const ir::Graph& f);

/// Gradient graph of a program seeded at `loss` (a fixed scalar): a
/// Seed node holds d(loss) at run time; every parameter gets a
/// ParamGradOut; every apply gets an ApplyGrad that runs ∂F.
std::shared_ptr<const ir::Graph> differentiate_program(const ir::Graph& program, ir::NodeId loss);

/// For each node of a gradient graph: true if it is a MatMul whose only
/// consumer is a ParamGradOut, so the executor can run it as
/// grad += A·B directly into the parameter's gradient (no temporary, no
/// separate accumulation pass).
std::vector<bool> foldable_param_matmuls(const ir::Graph& grad);

/// Removes nodes that reach no side-effecting node and no node in `keep`;
/// returns the compacted graph (ids renumbered, order kept).
ir::Graph eliminate_dead_code(const ir::Graph& g, std::span<const ir::NodeId> keep = {});

}  // namespace sylva::passes
