// Element types. float64 exists so gradient checks can be tight; int32
// holds ids (words, labels) fed to lookup and cross-entropy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sylva/core/error.h"

namespace sylva {

enum class DType : uint8_t { f32, f64, i32 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };

/// Calls fn(T{}) with T = float or double according to `t`; throws for
/// non-floating types. Used to instantiate kernels for both precisions.
template <class Fn>
decltype(auto) dispatch_floating(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: break;
  }
  SYLVA_THROW("[dtype] expected float32 or float64, got ", dtype_name(t));
}

}  // namespace sylva
