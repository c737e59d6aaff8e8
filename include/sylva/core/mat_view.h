// MatView: a matrix in some memory, as kernels see it.
#pragma once

#include <cstdint>

#include "sylva/core/dtype.h"

namespace sylva {

/// A contiguous row-major matrix in a backend's memory (host or device);
/// it owns nothing.
struct MatView {
  void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::f32;

  int64_t numel() const { return rows * cols; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
  MatView block(int64_t row_offset, int64_t n_rows) const {
    return {static_cast<char*>(data) + row_offset * cols * static_cast<int64_t>(dtype_size(dtype)), n_rows, cols,
            dtype};
  }
};

}  // namespace sylva
