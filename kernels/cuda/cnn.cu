// The CNN operators' own kernels: channel-slice copies and sums (the
// inputs IOS graphs concatenate from slices of earlier outputs), bias plus
// activation after cuDNN's convolution, and element-wise terms. Grid-stride
// loops over flat indices.
#include <cuda_runtime.h>

#include "cnn.h"

namespace sylva::cuda_kernels {

namespace {

constexpr int kThreads = 256;

unsigned grid(int64_t work) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b < 65535 ? b : 65535));
}

__device__ float act_of(float v, int act) {
  switch (act) {
    case 1: return v > 0.0f ? v : 0.0f;
    case 2: return 1.0f / (1.0f + expf(-v));
    case 3: return tanhf(v);
    default: return v;
  }
}

__global__ void move_channels_kernel(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels,
                                     int64_t y_c0, int64_t channels, int64_t n, int64_t hw, bool add) {
  const int64_t per = channels * hw, total = n * per;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / per, r = k % per;
    const float v = x[(i * x_channels + x_c0) * hw + r];
    float& out = y[(i * y_channels + y_c0) * hw + r];
    out = add ? out + v : v;
  }
}

__global__ void bias_activate_kernel(float* y, const float* bias, int64_t channels, int64_t hw, int64_t total,
                                     int act) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float b = bias ? bias[(k / hw) % channels] : 0.0f;
    y[k] = act_of(y[k] + b, act);
  }
}

__global__ void element_kernel(const float* x, float* y, int64_t terms, int64_t each, int64_t total, bool mul) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / each, r = k % each;
    float o = mul ? 1.0f : 0.0f;
    for (int64_t t = 0; t < terms; ++t) {
      const float v = x[(i * terms + t) * each + r];
      o = mul ? o * v : o + v;
    }
    y[k] = o;
  }
}

}  // namespace

int move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels, int64_t y_c0,
                  int64_t channels, int64_t n, int64_t hw, bool add, void* stream) {
  const int64_t total = n * channels * hw;
  if (total == 0) return 0;
  move_channels_kernel<<<grid(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, x_channels, x_c0, y, y_channels, y_c0, channels, n, hw, add);
  return static_cast<int>(cudaGetLastError());
}

int bias_activate(float* y, const float* bias, int64_t n, int64_t channels, int64_t hw, int act, void* stream) {
  const int64_t total = n * channels * hw;
  if (total == 0 || (!bias && act == 0)) return 0;
  bias_activate_kernel<<<grid(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(y, bias, channels, hw, total,
                                                                                         act);
  return static_cast<int>(cudaGetLastError());
}

int element_terms(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul, void* stream) {
  const int64_t total = n * each;
  if (total == 0) return 0;
  element_kernel<<<grid(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, terms, each, total, mul);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sylva::cuda_kernels
