// Element types. float64 exists so gradient checks can be tight; int32
// holds ids (words, labels) fed to lookup and cross-entropy; bfloat16 is a
// storage type only (the operands of GEMMs under Precision::bf16, see
// sylva/core/bfloat16.h): kernels compute in float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sylva/core/error.h"

namespace sylva {

enum class DType : uint8_t { f32, f64, i32, bf16 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::bf16: return 2;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

/// The precision GEMMs run in (ExecutorOptions::precision). fp32: float32
/// operands. bf16: operands rounded to bfloat16 (8-bit significand),
/// products accumulated and written in float32; parameters keep float32
/// master values and the GEMMs read bfloat16 copies of them.
enum class Precision : uint8_t { fp32, bf16 };

constexpr std::string_view precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }
/// "fp32" or "bf16"; sylva::Error naming both otherwise.
inline Precision precision_named(std::string_view name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  SYLVA_THROW("[dtype] unknown precision '", name, "' (fp32 or bf16)");
}

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
