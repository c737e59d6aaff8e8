// The kernels of the IOS CNN graphs' operators, forward only, float32 NCHW:
// convolution (stride, padding, groups) with bias and activation, max /
// average / global pooling, channel-slice copies and sums, activations and
// element-wise terms. Through oneDNN or naive reference loops on the CPU,
// through cuDNN and kernels/cuda on an NVIDIA GPU (-DSYLVA_BUILD_CUDA=ON).
//
// A CnnKernels works on one Backend: every pointer it is given lies in
// that backend's memory(), and its work is queued on the backend's current
// lane. Memory, copies, lanes and synchronisation are the Backend's; the
// graph logic that calls these kernels (which slices feed which node, IOS
// plans) is sylva/graph/cnn.h.
//
// @code
// std::unique_ptr<cnn::CnnKernels> k = cnn::make_cpu_cnn_kernels(/*reference=*/false);
// Backend& b = k->backend();                        // the CPU backend: host memory
// k->conv(spec, x, {1, 3, 8, 8}, w, bias, y);       // y = act(conv(x, w) + bias)
// @endcode
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sylva/backend/backend.h"

namespace sylva::cnn {

enum class Act : uint8_t { identity, relu, sigmoid, tanh };
/// "relu" | "sigmoid" | "tanh" | anything else: identity.
Act act_of(const std::string& name);

/// A [n, c, h, w] float tensor (NCHW).
struct Nchw {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t size() const { return n * c * h * w; }
};

/// A convolution layer: y = act(conv(x, w) + b), [out_h, out_w] per output
/// channel. Kernels may cache per-layer state (descriptors, primitives)
/// under `key`: specs with one key must be equal and see inputs of one size.
struct ConvSpec {
  std::string key;
  int64_t out_channels = 0, groups = 1;
  std::array<int64_t, 2> kernel{}, stride{}, padding{};
  int64_t out_h = 0, out_w = 0;
  Act act = Act::identity;
};

/// A pooling layer: max or average (padding counted, as PyTorch's default),
/// over a window or, when `global`, over the whole input (kernel, stride and
/// padding unused). `key` as ConvSpec's.
struct PoolSpec {
  std::string key;
  bool max = true, global = false;
  std::array<int64_t, 2> kernel{}, stride{}, padding{};
  int64_t out_h = 0, out_w = 0;
};

class CnnKernels {
 public:
  virtual ~CnnKernels() = default;
  /// The backend whose memory the pointers lie in and on whose current lane
  /// the work is queued. Synchronous kernels (the CPU's) may be called from
  /// several threads at once, for outputs that differ.
  virtual Backend& backend() = 0;
  /// y[i, y_c0 + c, :] = (or +=, with `add`) x[i, x_c0 + c, :] for i < n,
  /// c < channels, `hw` values each; x has x_channels, y y_channels.
  virtual void move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels,
                             int64_t y_c0, int64_t channels, int64_t n, int64_t hw, bool add) = 0;
  virtual void activate(float* y, int64_t count, Act act) = 0;
  /// y[i, k] = x[i, 0, k] op x[i, 1, k] op ... over `terms` operands of
  /// `each` values per sample; op is * with `mul`, else +.
  virtual void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) = 0;
  /// y = act(conv(x, w) + b): `x` is `in`, `w` [K, C / groups, kh, kw], `b`
  /// [K], y [N, K, out_h, out_w].
  virtual void conv(const ConvSpec& c, const float* x, Nchw in, const float* w, const float* b, float* y) = 0;
  /// y [N, C, out_h, out_w] pooled from `x` (`in`).
  virtual void pool(const PoolSpec& p, const float* x, Nchw in, float* y) = 0;
};

/// Direct convolution over NCHW (groups, stride, padding), then bias and
/// activation, accumulating in double: the reference every convolution is
/// checked against. `x` is [N, C, H, W]; `y` becomes [N, K, out_h, out_w].
template <class T>
void conv_reference(const ConvSpec& c, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y);

/// On the CPU backend (host memory): oneDNN primitives, or the naive
/// reference loops with `reference`.
std::unique_ptr<CnnKernels> make_cpu_cnn_kernels(bool reference);
/// cuDNN and kernels/cuda on backend_for(Device::cuda(0)), each lane with a
/// cuDNN handle and workspace of its own; sylva::Error when built without
/// CUDA or when no GPU is visible.
std::unique_ptr<CnnKernels> make_cudnn_cnn_kernels();

}  // namespace sylva::cnn
