// Internal: where a cnn::CnnRunner's values live and how its operators
// run. The runner keeps the graph logic (which slices feed which node,
// sequential nodes, merged convolutions, plans); a CnnOps supplies memory
// and primitives over raw float pointers in that memory: oneDNN or the
// reference loops on the CPU (cpu/cnn_cpu.cc), cuDNN and kernels/cuda on
// the GPU (cuda/cnn_cudnn.cc; no_cuda/ says how to get it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sylva/backend/cnn.h"
#include "sylva/core/buffer.h"

namespace sylva::cnn {

enum class Act : uint8_t { identity, relu, sigmoid, tanh };
/// "relu" | "sigmoid" | "tanh" | anything else: identity.
Act act_of(const std::string& name);

/// A [n, c, h, w] float tensor (NCHW).
struct Nchw {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t size() const { return n * c * h * w; }
};

class CnnOps {
 public:
  virtual ~CnnOps() = default;
  virtual Memory& memory() = 0;
  virtual void upload(float* dst, const float* src, int64_t count) = 0;
  /// Waits for all queued work first.
  virtual void download(float* dst, const float* src, int64_t count) = 0;
  /// y[i, y_c0 + c, :] = (or +=, with `add`) x[i, x_c0 + c, :] for i < n,
  /// c < channels, `hw` values each; x has x_channels, y y_channels.
  virtual void move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels,
                             int64_t y_c0, int64_t channels, int64_t n, int64_t hw, bool add) = 0;
  virtual void activate(float* y, int64_t count, Act act) = 0;
  /// y[i, k] = x[i, 0, k] op x[i, 1, k] op ... over `terms` operands of
  /// `each` values per sample; op is * with `mul`, else +.
  virtual void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) = 0;
  /// y = act(conv(x, w) + b) with n's kernel, stride, padding and groups;
  /// `x` is `in`, `w` [K, C / groups, kh, kw], y [N, K, OH, OW]. Per-node
  /// state (descriptors, primitives) may be cached by n.name.
  virtual void conv(const ios::CnnNode& n, const float* x, Nchw in, const float* w, const float* b, float* y) = 0;
  /// Max / average (padding counted) / global pooling of `x` (`in`).
  virtual void pool(const ios::CnnNode& n, const float* x, Nchw in, float* y) = 0;

  /// Concurrent groups. Asynchronous ops (a GPU) give each group a lane (a
  /// stream): fork(k) makes lanes 0..k-1 start after the work queued so
  /// far, lane(g) sends the calls that follow to lane g, join() makes lane
  /// 0 wait for all of them. Synchronous ops (the CPU) return 0 from
  /// lanes() and the runner gives the groups threads instead.
  virtual int lanes() const { return 0; }
  virtual void fork(int lanes) { (void)lanes; }
  virtual void lane(int g) { (void)g; }
  virtual void join() {}
  /// Returns when all queued work is done.
  virtual void synchronize() {}
};

std::unique_ptr<CnnOps> make_cpu_cnn_ops(bool reference);
/// cuDNN on CUDA device 0; sylva::Error when built without CUDA or when no
/// GPU is visible.
std::unique_ptr<CnnOps> make_cudnn_cnn_ops();

}  // namespace sylva::cnn
