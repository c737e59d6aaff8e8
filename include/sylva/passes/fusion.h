// Fusion planning: which directly linked row-local ops run as one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sylva/ir/fused.h"
#include "sylva/ir/graph.h"

namespace sylva::passes {

/// Groups of fusible nodes of `g` linked by direct edges (union-find over
/// the edges whose two ends are both `fusible`). A union is undone if it
/// would make the group non-convex -- a path leaving the group and coming
/// back through other nodes -- since a group runs as one unit and the
/// graph of units must stay acyclic. Returns each node's group index
/// (0, 1, ... in order of the groups' first nodes), or -1 for nodes that
/// are not fusible or would be alone in their group.
std::vector<int32_t> fusion_groups(const ir::Graph& g, const std::vector<bool>& fusible);

/// An execution order of the units of `g`: each entry is a node id (>= 0)
/// or a whole group, -1 - group. Nodes keep their relative order wherever
/// the groups allow (a group runs at the earliest point all its inputs are
/// ready and ahead of everything that reads it).
std::vector<int32_t> unit_order(const ir::Graph& g, const std::vector<int32_t>& group);

/// `p` for a task in which the external inputs flagged in `zero_input`
/// (one flag per input) are all zeros: a sum with a zero term is its other
/// term (x + 0, 0 + x, x - 0), an assemble drops its zero pieces, and a
/// step nothing then reads is left out; an output step that became another
/// value is written as a copy of it. Steps that are zero by their op's
/// Zeros rule and still read (or written out) are computed as before, from
/// zeros. Same results as `p` on such inputs, bit for bit (adding a zero
/// changes no bits but the sign of a zero). `unused_output` (one flag per
/// output, or empty): outputs not written in the task, their steps then
/// computed only where another step reads them. Returns `p` unchanged when
/// no input is zero and every output is used.
ir::FusedProgram without_zero_inputs(const ir::FusedProgram& p, std::span<const uint8_t> zero_input,
                                     std::span<const uint8_t> unused_output = {});

}  // namespace sylva::passes
