// Internal: a value of fixed size (not a row per vertex) in a backend's
// memory, kept across minibatches: the Executor's program values and a
// VertexRunner's fixed values.
#pragma once

#include <vector>

#include "sylva/backend/backend.h"

namespace sylva::detail {

/// A fixed-size value: a grow-only buffer and its current view.
struct ValueBuffer {
  ValueBuffer() = default;
  explicit ValueBuffer(Memory& memory) : buf(memory) {}
  Buffer buf;
  MatView view;
  /// Points view at `rows x cols` of dtype, growing buf if needed.
  MatView& shape(int64_t rows, int64_t cols, DType dtype);
};

/// `n` slots whose buffers come from `memory`.
std::vector<ValueBuffer> make_value_buffers(size_t n, Memory& memory);

}  // namespace sylva::detail
