// DynamicTensor: the batched value of one symbol of a vertex function.
#pragma once

#include "sylva/core/buffer.h"
#include "sylva/core/dtype.h"
#include "sylva/core/mat_view.h"
#include "sylva/core/shape.h"

namespace sylva {

/// Cavs' dynamic tensor: a row shape (without the batch dimension), a
/// growable contiguous arena (host or device memory), and the window
/// [offset, offset + bs) of rows the current task reads or writes. Rows are laid out in task order, so
/// every task touches one contiguous block. The arena only grows.
///
/// @code
/// DynamicTensor h(Shape{150}, DType::f32);
/// h.reserve_rows(total_vertices);      // once per minibatch, before execution
/// h.set_window(task_offset, task_bs);  // per task
/// float* block = h.window<float>();    // bs x 150, contiguous
/// @endcode
class DynamicTensor {
 public:
  DynamicTensor() = default;
  /// An empty tensor whose arena comes from `memory` (host memory by
  /// default; a backend's own for device arenas).
  DynamicTensor(Shape row_shape, DType dtype, Memory& memory = host_memory())
      : row_shape_(std::move(row_shape)), dtype_(dtype), arena_(memory) {}

  const Shape& row_shape() const { return row_shape_; }
  DType dtype() const { return dtype_; }
  int64_t cols() const { return row_shape_.numel(); }
  size_t row_bytes() const { return static_cast<size_t>(cols()) * dtype_size(dtype_); }

  /// Makes room for `rows` rows; grows the arena only when needed (with
  /// `keep`, the rows it held are copied over; else they are lost).
  /// Returns true if it allocated.
  bool reserve_rows(int64_t rows, bool keep = false);
  int64_t capacity_rows() const;
  int64_t bs() const { return bs_; }
  int64_t offset() const { return offset_; }
  void set_window(int64_t offset, int64_t bs);

  void* row(int64_t r) { return static_cast<char*>(arena_.data()) + r * row_bytes(); }
  const void* row(int64_t r) const { return static_cast<const char*>(arena_.data()) + r * row_bytes(); }
  template <class T>
  T* window() { return static_cast<T*>(row(offset_)); }
  const Buffer& arena() const { return arena_; }
  /// Rows [offset, offset + bs) as a matrix: a task's block.
  MatView rows(int64_t offset, int64_t bs) { return {row(offset), bs, cols(), dtype_}; }
  /// The same of a const tensor, for reading (kernels take non-const views).
  MatView rows(int64_t offset, int64_t bs) const {
    return {const_cast<void*>(row(offset)), bs, cols(), dtype_};
  }

 private:
  Shape row_shape_;
  DType dtype_ = DType::f32;
  Buffer arena_;
  int64_t bs_ = 0;
  int64_t offset_ = 0;
};

}  // namespace sylva
