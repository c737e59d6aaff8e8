// Tensor: a dense, row-major, reference-counted array.
#pragma once

#include <memory>

#include "sylva/core/buffer.h"
#include "sylva/core/device.h"
#include "sylva/core/dtype.h"
#include "sylva/core/shape.h"

namespace sylva {

/// A dense row-major tensor. Copies share storage (like a shared_ptr);
/// clone() makes a deep copy. Host memory only in this module: device
/// tensors are created by a backend.
///
/// @code
/// Tensor w(Shape{3, 4}, DType::f64);      // zero-filled
/// w.data<double>()[0] = 1.0;
/// Tensor v = w.clone();
/// @endcode
class Tensor {
 public:
  Tensor() = default;
  /// Zero-filled tensor on the host.
  Tensor(Shape shape, DType dtype);
  /// A tensor over host memory Sylva did not allocate (a NumPy array's, a
  /// DLPack capsule's): `data` holds shape.numel() contiguous row-major
  /// elements of `dtype`, and stays valid while `owner` lives; every copy
  /// of the tensor keeps `owner` alive. Such a tensor never grows, and its
  /// data need not be 64-byte aligned.
  static Tensor wrap(void* data, Shape shape, DType dtype, std::shared_ptr<void> owner);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return Device::cpu(); }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return storage_ ? storage_->data() : nullptr; }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }

  /// Typed access; throws sylva::Error if T does not match dtype().
  template <class T>
  T* data() {
    check_type(dtype_of<T>::value);
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>::value);
    return static_cast<const T*>(raw());
  }

  /// Element i as double, whatever the dtype (for tests and printing).
  double at(int64_t i) const;
  void set(int64_t i, double v);

  Tensor clone() const;
  void fill_zero();
  /// Copies values from `src` (same shape and dtype required).
  void copy_from(const Tensor& src);
  /// Same storage, new shape with equal numel.
  Tensor reshape(Shape s) const;

 private:
  void check_type(DType t) const;

  Shape shape_;
  DType dtype_ = DType::f32;
  std::shared_ptr<Buffer> storage_;
};

}  // namespace sylva
