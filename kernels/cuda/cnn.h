// Launchers for the CNN kernels of kernels/cuda/cnn.cu (the parts of the
// IOS graphs' operators that cuDNN does not do: channel slices, bias with
// activation, element-wise terms). Plain declarations: the host passes its
// cudaStream_t as `stream` and checks the returned cudaError_t (0: launched).
#pragma once

#include <cstdint>

namespace sylva::cuda_kernels {

/// Activations by code: 0 identity, 1 relu, 2 sigmoid, 3 tanh.
/// y[i, y_c0 + c, :] = (or += with `add`) x[i, x_c0 + c, :] for i < n,
/// c < channels, `hw` floats each; x has x_channels, y y_channels.
int move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels, int64_t y_c0,
                  int64_t channels, int64_t n, int64_t hw, bool add, void* stream);
/// y[i, k, :] = act(y[i, k, :] + bias[k]) over [n, channels, hw]; bias may
/// be null (then only the activation).
int bias_activate(float* y, const float* bias, int64_t n, int64_t channels, int64_t hw, int act, void* stream);
/// y[i, k] = x[i, 0, k] op x[i, 1, k] op ... over `terms` operands of
/// `each` floats per sample; op is * with `mul`, else +.
int element_terms(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul, void* stream);

}  // namespace sylva::cuda_kernels
