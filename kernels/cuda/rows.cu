// Row movement at F's boundary on the GPU: indexed row copies (gather),
// scatter-adds and elementwise accumulation. One block row per index, the
// threads striding over the columns.
#include <cuda_runtime.h>

#include "rows.h"

namespace sylva::cuda_kernels {

namespace {

constexpr int kThreads = 128;

template <class T>
__global__ void copy_rows_kernel(const T* src, const int32_t* src_idx, T* dst, const int32_t* dst_idx, int64_t n,
                                 int64_t cols) {
  for (int64_t k = blockIdx.x; k < n; k += gridDim.x) {
    const int64_t s = src_idx ? src_idx[k] : k;
    const int64_t d = dst_idx ? dst_idx[k] : k;
    if (d < 0) continue;
    T* out = dst + d * cols;
    if (s < 0) {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = T(0);
    } else {
      const T* in = src + s * cols;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = in[c];
    }
  }
}

template <class T, bool kAtomic>
__global__ void add_rows_kernel(const T* src, const int32_t* src_idx, T* dst, const int32_t* dst_idx, int64_t n,
                                int64_t cols) {
  for (int64_t k = blockIdx.x; k < n; k += gridDim.x) {
    const int64_t s = src_idx ? src_idx[k] : k;
    const int64_t d = dst_idx ? dst_idx[k] : k;
    if (s < 0 || d < 0) continue;
    const T* in = src + s * cols;
    T* out = dst + d * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      if constexpr (kAtomic)
        atomicAdd(out + c, in[c]);
      else
        out[c] += in[c];
    }
  }
}

template <class T>
__global__ void accumulate_kernel(const T* src, T* dst, int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

// sylva/core/bfloat16.h's rounding, bit for bit: to nearest, ties to even,
// denormals to a signed zero, NaNs quiet.
__global__ void to_bf16_kernel(const uint32_t* src, uint16_t* dst, int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t u = src[i];
    if ((u & 0x7f800000u) == 0) {
      dst[i] = static_cast<uint16_t>((u >> 16) & 0x8000u);
    } else if ((u & 0x7fffffffu) > 0x7f800000u) {
      dst[i] = static_cast<uint16_t>((u >> 16) | 0x0040u);
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      dst[i] = static_cast<uint16_t>(u >> 16);
    }
  }
}

__global__ void from_bf16_kernel(const uint16_t* src, uint32_t* dst, int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = static_cast<uint32_t>(src[i]) << 16;
}

unsigned blocks(int64_t work) { return static_cast<unsigned>(work < 1 ? 1 : (work < 65535 ? work : 65535)); }

}  // namespace

int copy_rows(const void* src, const int32_t* src_idx, void* dst, const int32_t* dst_idx, int64_t n, int64_t cols,
              int elem_bytes, void* stream) {
  if (n == 0 || cols == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  if (elem_bytes == 8)
    copy_rows_kernel<double><<<blocks(n), kThreads, 0, s>>>(static_cast<const double*>(src), src_idx,
                                                             static_cast<double*>(dst), dst_idx, n, cols);
  else
    copy_rows_kernel<float><<<blocks(n), kThreads, 0, s>>>(static_cast<const float*>(src), src_idx,
                                                            static_cast<float*>(dst), dst_idx, n, cols);
  return static_cast<int>(cudaGetLastError());
}

namespace {

template <class T>
void launch_add_rows(const void* src, const int32_t* src_idx, void* dst, const int32_t* dst_idx, int64_t n,
                     int64_t cols, bool atomic, cudaStream_t s) {
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  if (atomic)
    add_rows_kernel<T, true><<<blocks(n), kThreads, 0, s>>>(in, src_idx, out, dst_idx, n, cols);
  else
    add_rows_kernel<T, false><<<blocks(n), kThreads, 0, s>>>(in, src_idx, out, dst_idx, n, cols);
}

}  // namespace

int add_rows(const void* src, const int32_t* src_idx, void* dst, const int32_t* dst_idx, int64_t n, int64_t cols,
             bool f64, bool atomic, void* stream) {
  if (n == 0 || cols == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  if (f64)
    launch_add_rows<double>(src, src_idx, dst, dst_idx, n, cols, atomic, s);
  else
    launch_add_rows<float>(src, src_idx, dst, dst_idx, n, cols, atomic, s);
  return static_cast<int>(cudaGetLastError());
}

int accumulate(const void* src, void* dst, int64_t numel, bool f64, void* stream) {
  if (numel == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned grid = blocks((numel + kThreads - 1) / kThreads);
  if (f64)
    accumulate_kernel<double><<<grid, kThreads, 0, s>>>(static_cast<const double*>(src), static_cast<double*>(dst),
                                                         numel);
  else
    accumulate_kernel<float><<<grid, kThreads, 0, s>>>(static_cast<const float*>(src), static_cast<float*>(dst),
                                                        numel);
  return static_cast<int>(cudaGetLastError());
}

int convert_bf16(const void* src, void* dst, int64_t numel, bool to_bf16, void* stream) {
  if (numel == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned grid = blocks((numel + kThreads - 1) / kThreads);
  if (to_bf16)
    to_bf16_kernel<<<grid, kThreads, 0, s>>>(static_cast<const uint32_t*>(src), static_cast<uint16_t*>(dst), numel);
  else
    from_bf16_kernel<<<grid, kThreads, 0, s>>>(static_cast<const uint16_t*>(src), static_cast<uint32_t*>(dst), numel);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sylva::cuda_kernels
