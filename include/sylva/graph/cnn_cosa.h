// CNN kernels whose convolutions run on CoSA-scheduled kernels (issue:
// CoSA drives Sylva's own kernels): every convolution layer is scheduled
// once, on first use, by CoSA's MIP for this CPU (cosa::this_cpu_arch,
// cosa::cpu_mapspace) and run by cosa::run_conv, the kernel generator that
// realises the mapping; bias and activation follow. Pooling, channel moves,
// activations and element-wise terms stay oneDNN's / the CPU backend's.
//
// Two modes: `cosa` runs every convolution on its CoSA kernel and throws
// sylva::Error (naming the layer) for one the generator cannot realise
// (grouped convolutions); `pick` times both kernels on the layer's first
// call (best of three each, on the call's own data) and keeps the faster
// per layer key, falling back to oneDNN, with a one-line reason, where the
// CoSA kernel cannot run. decisions() says what each layer got and why.
//
// The measured choices persist in a cache file when one is given (the
// constructor's `cache`, or SYLVA_COSA_CACHE for the Mode-only constructor
// that Impl::cosa_pick uses): one line per layer, keyed by this machine's
// architecture and core count, the layer's key and its shape. A layer
// found there is not timed again (its decision says "cached"); a new
// measurement rewrites the file atomically, keeping the other machines'
// and layers' lines. A malformed file is a sylva::Error naming it and the
// line; a missing one is an empty cache.
//
// @code
// cnn::CnnRunner r(g, 1, 7, cnn::Impl::cosa_pick);     // or through the Impl
// auto k = std::make_unique<cnn::CosaCnnKernels>(cnn::CosaCnnKernels::Mode::pick);
// for (const cnn::ConvDecision& d : k->decisions()) std::puts(d.line().c_str());
// @endcode
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sylva/backend/cnn_kernels.h"
#include "sylva/sched/cosa_spec.h"

namespace sylva::cnn {

/// What one convolution layer runs on, and why.
struct ConvDecision {
  std::string key;
  bool cosa = false;         // the CoSA kernel (else oneDNN)
  double solve_seconds = 0;  // CoSA's MIP; 0 where it did not run
  double cosa_ms = 0, onednn_ms = 0;  // measured on the first call in `pick` mode (0: not measured)
  std::string reason;        // why, in a few words ("measured", "cached", "scheduled", "fell back: ...")
  /// "conv <key>: cosa (1.20 ms vs onednn 1.50 ms)" and the like.
  std::string line() const;
};

/// The CoSA problem of convolution `c` on input `in`: N, K, C, P = out_h,
/// Q = out_w, R, S = the kernel's height and width, strides; the padding is
/// realised by the caller (a zero-bordered copy of the input). sylva::Error
/// naming the layer for groups != 1.
cosa::Problem conv_problem(const ConvSpec& c, Nchw in);

class CosaCnnKernels final : public CnnKernels {
 public:
  enum class Mode : uint8_t { cosa, pick };
  /// On this CPU's architecture (cosa::this_cpu_arch()), with the cache
  /// file SYLVA_COSA_CACHE names (none if unset or empty).
  explicit CosaCnnKernels(Mode mode);
  /// On `arch` (Registers, the caches and DRAM, as cosa::cpu_arch makes);
  /// `cache`: the pick cache's file ("" for none; `pick` mode only).
  CosaCnnKernels(Mode mode, const cosa::Arch& arch, const std::string& cache = "");
  ~CosaCnnKernels() override;

  Backend& backend() override;
  void move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels, int64_t y_c0,
                     int64_t channels, int64_t n, int64_t hw, bool add) override;
  void activate(float* y, int64_t count, Act act) override;
  void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) override;
  void conv(const ConvSpec& c, const float* x, Nchw in, const float* w, const float* b, float* y) override;
  void pool(const PoolSpec& p, const float* x, Nchw in, float* y) override;

  /// One per convolution layer key seen so far, in first-use order.
  std::vector<ConvDecision> decisions() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace sylva::cnn
