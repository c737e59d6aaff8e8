// Launchers for the row-movement kernels of kernels/cuda/rows.cu. Plain
// declarations (no CUDA types): the host backend passes its cudaStream_t as
// `stream` and checks the returned cudaError_t value (0: launched).
#pragma once

#include <cstdint>

namespace sylva::cuda_kernels {

/// dst[dst_idx[k]] = src[src_idx[k]] for k < n, rows of `cols` elements of
/// `elem_bytes` (4 or 8); a negative src index writes a zero row, a negative
/// dst index skips the row. Index arrays live in device memory; nullptr
/// means the identity.
int copy_rows(const void* src, const int32_t* src_idx, void* dst, const int32_t* dst_idx, int64_t n, int64_t cols,
              int elem_bytes, void* stream);
/// dst[dst_idx[k]] += src[src_idx[k]] (negative indices skipped); with
/// `atomic`, atomically, since several k may target one row; without it,
/// the caller promises the target rows are distinct (one writer per
/// element: plain loads and stores). f64: double, else float.
int add_rows(const void* src, const int32_t* src_idx, void* dst, const int32_t* dst_idx, int64_t n, int64_t cols,
             bool f64, bool atomic, void* stream);
/// dst += src over `numel` elements.
int accumulate(const void* src, void* dst, int64_t numel, bool f64, void* stream);
/// float32 -> bfloat16 (`to_bf16`, rounded as sylva/core/bfloat16.h says,
/// bit for bit) or back, over `numel` elements.
int convert_bf16(const void* src, void* dst, int64_t numel, bool to_bf16, void* stream);

}  // namespace sylva::cuda_kernels
