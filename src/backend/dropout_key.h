// Internal: the counter-based key of DropoutMask's random stream, shared by
// the CPU kernel and the CUDA backend (kernels/cuda/ops.cu repeats `mix` on
// the device, since device code includes nothing outside kernels/). The mask
// value of (seed, step, node, vertex, column) is a pure function, so Serial
// and Bfs (which order rows differently) and both backends agree.
#pragma once

#include <cstdint>

#include "sylva/backend/backend.h"

namespace sylva {

inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The vertex row r's numbers are keyed on: ExecContext::row_vertex (else
/// r), mapped through ExecContext::vertex_key when set.
inline uint64_t dropout_vertex(const ExecContext& ctx, int64_t r) {
  const int64_t v = ctx.row_vertex ? ctx.row_vertex[r] : r;
  return static_cast<uint64_t>(ctx.vertex_key ? static_cast<int64_t>(ctx.vertex_key[v]) : v);
}

/// The stream's base key for this call: keyed by the node the mask was
/// written as (attrs.ref when a pass re-emitted it), so reordering F keeps it.
inline uint64_t dropout_base(const ExecContext& ctx, const ir::Node& node) {
  const ir::NodeId key = node.attrs.ref != ir::kNoNode ? node.attrs.ref : node.id;
  return mix(ctx.seed ^ mix(ctx.step * 0x100000001B3ull + static_cast<uint64_t>(key)));
}

}  // namespace sylva
