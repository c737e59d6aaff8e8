// Shape: the extents of a dense row-major tensor.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace sylva {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_.at(i); }
  const std::vector<int64_t>& dims() const { return dims_; }
  /// Product of all extents (1 for rank 0).
  int64_t numel() const;
  /// Extent of the last axis (1 for rank 0): the width of one matrix row.
  int64_t cols() const { return dims_.empty() ? 1 : dims_.back(); }
  /// numel() / cols(): the number of matrix rows when viewed as 2-D.
  int64_t rows() const;
  std::string str() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace sylva
