#include "value_buffer.h"

#include <algorithm>

namespace sylva::detail {

MatView& ValueBuffer::shape(int64_t rows, int64_t cols, DType dtype) {
  buf.reserve(static_cast<size_t>(std::max<int64_t>(rows * cols, 1)) * dtype_size(dtype));
  view = {buf.data(), rows, cols, dtype};
  return view;
}

std::vector<ValueBuffer> make_value_buffers(size_t n, Memory& memory) {
  std::vector<ValueBuffer> buffers;
  buffers.reserve(n);
  for (size_t i = 0; i < n; ++i) buffers.emplace_back(memory);
  return buffers;
}

}  // namespace sylva::detail
