// Optimiser updates on the GPU: the rules of sylva::ParamUpdate element by
// element (the CPU's kernels_optim.cc, same operations in the same order
// and precision), and the sum of squares of a gradient in double, in two
// deterministic passes (per-block partials, then one block).
#include <cuda_runtime.h>

#include "optim.h"

namespace sylva::cuda_kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 256;  // sum_squares' partials

unsigned grid(int64_t work, int64_t cap = 65535) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b < cap ? b : cap));
}

// The element index of the k-th covered element.
__device__ int64_t element(int64_t k, const int32_t* rows, int64_t cols) {
  return rows ? static_cast<int64_t>(rows[k / cols]) * cols + k % cols : k;
}

template <class T>
__global__ void update_kernel(T* w, const T* g, T* s0, T* s1, int64_t total, const int32_t* rows, int64_t cols,
                              UpdateConstants k) {
  const T rate = static_cast<T>(k.lr), a = static_cast<T>(k.a), b = static_cast<T>(k.b);
  const T eps = static_cast<T>(k.eps), c1 = static_cast<T>(k.c1), c2 = static_cast<T>(k.c2);
  const T decay = static_cast<T>(k.decay), scale = static_cast<T>(k.scale);
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < total;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = element(j, rows, cols);
    T gi = g[i];
    if (k.decay != 0.0) gi += decay * w[i];
    gi *= scale;
    switch (k.rule) {
      case 0: w[i] -= rate * gi; break;
      case 1:
        s0[i] = a * s0[i] + gi;
        w[i] -= rate * s0[i];
        break;
      case 2:
        s0[i] += gi * gi;
        w[i] -= rate * gi / (sqrt(s0[i]) + eps);
        break;
      default:
        s0[i] = a * s0[i] + (T(1) - a) * gi;
        s1[i] = b * s1[i] + (T(1) - b) * gi * gi;
        w[i] -= rate * (s0[i] * c1) / (sqrt(s1[i] * c2) + eps);
        break;
    }
  }
}

__device__ double block_sum(double v) {
  __shared__ double shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  return shared[0];
}

template <class T>
__global__ void partial_squares_kernel(const T* g, const T* w, double decay, int64_t total, const int32_t* rows,
                                       int64_t cols, double* partials) {
  const T d = static_cast<T>(decay);
  double sq = 0.0;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < total;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = element(j, rows, cols);
    T gi = g[i];
    if (decay != 0.0) gi += d * w[i];
    sq += static_cast<double>(gi) * static_cast<double>(gi);
  }
  const double s = block_sum(sq);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void total_kernel(const double* partials, int n, double* out) {
  const double s = block_sum(static_cast<int>(threadIdx.x) < n ? partials[threadIdx.x] : 0.0);
  if (threadIdx.x == 0) *out = s;
}

}  // namespace

int update_parameter(void* w, const void* g, void* s0, void* s1, int64_t n, const int32_t* rows, int64_t n_rows,
                     int64_t cols, const UpdateConstants& k, bool f64, void* stream) {
  const int64_t total = rows ? n_rows * cols : n;
  if (total == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  if (f64)
    update_kernel<double><<<grid(total), kThreads, 0, s>>>(static_cast<double*>(w), static_cast<const double*>(g),
                                                          static_cast<double*>(s0), static_cast<double*>(s1), total,
                                                          rows, cols, k);
  else
    update_kernel<float><<<grid(total), kThreads, 0, s>>>(static_cast<float*>(w), static_cast<const float*>(g),
                                                         static_cast<float*>(s0), static_cast<float*>(s1), total, rows,
                                                         cols, k);
  return static_cast<int>(cudaGetLastError());
}

int sum_squares(const void* g, const void* w, double decay, int64_t n, const int32_t* rows, int64_t n_rows,
                int64_t cols, double* partials, double* out, bool f64, void* stream) {
  const int64_t total = rows ? n_rows * cols : n;
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = grid(total, kMaxBlocks);
  if (total == 0) return static_cast<int>(cudaMemsetAsync(out, 0, sizeof(double), s));
  if (f64)
    partial_squares_kernel<double><<<blocks, kThreads, 0, s>>>(static_cast<const double*>(g),
                                                               static_cast<const double*>(w), decay, total, rows,
                                                               cols, partials);
  else
    partial_squares_kernel<float><<<blocks, kThreads, 0, s>>>(static_cast<const float*>(g),
                                                              static_cast<const float*>(w), decay, total, rows, cols,
                                                              partials);
  total_kernel<<<1, kThreads, 0, s>>>(partials, static_cast<int>(blocks), out);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sylva::cuda_kernels
