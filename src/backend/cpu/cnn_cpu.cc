// The CNN kernels on the CPU backend: oneDNN primitives (created once per
// layer key, cached) and naive reference loops, both over host memory.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sylva/backend/cnn_kernels.h"
#include "sylva/core/error.h"

namespace sylva::cnn {
namespace {

template <class T>
T activate_one(Act act, T x) {
  switch (act) {
    case Act::relu: return std::max(x, T{0});
    case Act::sigmoid: return T{1} / (T{1} + std::exp(-x));
    case Act::tanh: return std::tanh(x);
    case Act::identity: return x;
  }
  return x;
}

// Pooling; average pooling counts the padding (as PyTorch's default, which
// the IOS graphs come from).
void pool_reference(const PoolSpec& n, const float* x, Nchw in, float* y) {
  const bool global = n.global, is_max = n.max;
  const int64_t H = in.h, W = in.w;
  const int64_t KH = global ? H : n.kernel[0], KW = global ? W : n.kernel[1];
  const int64_t SH = global ? 1 : n.stride[0], SW = global ? 1 : n.stride[1];
  const int64_t PH = global ? 0 : n.padding[0], PW = global ? 0 : n.padding[1];
  const int64_t OH = n.out_h, OW = n.out_w;
  for (int64_t i = 0; i < in.n * in.c; ++i)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t r = 0; r < KH; ++r)
          for (int64_t q = 0; q < KW; ++q) {
            const int64_t ih = oh * SH - PH + r, iw = ow * SW - PW + q;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[(i * H + ih) * W + iw];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        y[(i * OH + oh) * OW + ow] = static_cast<float>(is_max ? acc : acc / static_cast<double>(KH * KW));
      }
}

// oneDNN: one engine and one primitive per layer key, created on first use.
// Primitives take their scratchpad from the caller (scratchpad_mode::user):
// oneDNN's own is shared by all primitives, so concurrent groups would
// overwrite each other's.
class OneDnn {
 public:
  struct Prim {
    dnnl::primitive p;
    dnnl::memory::desc scratchpad;
  };
  using dims = dnnl::memory::dims;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;

  Prim conv(const ConvSpec& n, Nchw in) {
    std::lock_guard<std::mutex> lock(m_);
    if (auto it = prims_.find(n.key); it != prims_.end()) return it->second;
    const int64_t K = n.out_channels, G = n.groups;
    const dnnl::memory::desc src({in.n, in.c, in.h, in.w}, dt::f32, tag::nchw);
    const dnnl::memory::desc wei = G == 1 ? dnnl::memory::desc({K, in.c, n.kernel[0], n.kernel[1]}, dt::f32,
                                                               tag::oihw)
                                          : dnnl::memory::desc({G, K / G, in.c / G, n.kernel[0], n.kernel[1]},
                                                               dt::f32, tag::goihw);
    const dnnl::memory::desc bias({K}, dt::f32, tag::a);
    const dnnl::memory::desc dst({in.n, K, n.out_h, n.out_w}, dt::f32, tag::nchw);
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                            src, wei, bias, dst, {n.stride[0], n.stride[1]}, {0, 0},
                                            {n.padding[0], n.padding[1]}, {n.padding[0], n.padding[1]});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (const Act act = n.act; act != Act::identity) {
      dnnl::post_ops po;
      const dnnl::algorithm alg = act == Act::relu      ? dnnl::algorithm::eltwise_relu
                                  : act == Act::sigmoid ? dnnl::algorithm::eltwise_logistic
                                                        : dnnl::algorithm::eltwise_tanh;
      po.append_eltwise(1.0f, alg, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    const dnnl::convolution_forward::primitive_desc pd(d, attr, engine_);
    return prims_.emplace(n.key, Prim{dnnl::convolution_forward(pd), pd.scratchpad_desc()}).first->second;
  }

  Prim pool(const PoolSpec& n, Nchw in) {
    std::lock_guard<std::mutex> lock(m_);
    if (auto it = prims_.find(n.key); it != prims_.end()) return it->second;
    const bool global = n.global;
    const dnnl::memory::desc src({in.n, in.c, in.h, in.w}, dt::f32, tag::nchw);
    const dnnl::memory::desc dst({in.n, in.c, n.out_h, n.out_w}, dt::f32, tag::nchw);
    const dims kernel = global ? dims{in.h, in.w} : dims{n.kernel[0], n.kernel[1]};
    const dims stride = global ? dims{1, 1} : dims{n.stride[0], n.stride[1]};
    const dims pad = global ? dims{0, 0} : dims{n.padding[0], n.padding[1]};
    const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference,
                                        n.max ? dnnl::algorithm::pooling_max
                                                    : dnnl::algorithm::pooling_avg_include_padding,
                                        src, dst, stride, kernel, pad, pad);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::pooling_forward::primitive_desc pd(d, attr, engine_);
    return prims_.emplace(n.key, Prim{dnnl::pooling_forward(pd), pd.scratchpad_desc()}).first->second;
  }

  // Runs a primitive on a stream of this thread (oneDNN streams are not
  // shared across threads), with this thread's scratchpad.
  void execute(const Prim& prim, std::unordered_map<int, dnnl::memory> args) {
    thread_local std::vector<char> scratch;
    if (scratch.size() < prim.scratchpad.get_size()) scratch.resize(prim.scratchpad.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(prim.scratchpad, engine_, scratch.data()));
    dnnl::stream s(engine_);
    prim.p.execute(s, args);
    s.wait();
  }
  dnnl::memory wrap(const dims& d, const float* data, tag t) {
    return dnnl::memory({d, dt::f32, t}, engine_, const_cast<float*>(data));
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex m_;
  std::map<std::string, Prim> prims_;
};

class CpuCnnKernels final : public CnnKernels {
 public:
  explicit CpuCnnKernels(bool reference) {
    if (!reference) dnnl_ = std::make_unique<OneDnn>();
  }
  Backend& backend() override { return backend_; }
  void move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels, int64_t y_c0,
                     int64_t channels, int64_t n, int64_t hw, bool add) override {
    for (int64_t i = 0; i < n; ++i) {
      const float* s = x + (i * x_channels + x_c0) * hw;
      float* d = y + (i * y_channels + y_c0) * hw;
      if (add) {
        for (int64_t k = 0; k < channels * hw; ++k) d[k] += s[k];
      } else {
        std::copy_n(s, channels * hw, d);
      }
    }
  }
  void activate(float* y, int64_t count, Act act) override {
    for (int64_t k = 0; k < count; ++k) y[k] = activate_one(act, y[k]);
  }
  void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) override {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < each; ++k) {
        float o = mul ? 1.0f : 0.0f;
        for (int64_t t = 0; t < terms; ++t) {
          const float v = x[(i * terms + t) * each + k];
          o = mul ? o * v : o + v;
        }
        y[i * each + k] = o;
      }
  }
  void conv(const ConvSpec& n, const float* x, Nchw in, const float* w, const float* b, float* y) override {
    const int64_t K = n.out_channels, G = n.groups, wsize = K * in.c / G * n.kernel[0] * n.kernel[1];
    if (!dnnl_) {
      std::vector<float> out;
      conv_reference(n, std::vector<float>(x, x + in.size()), in.n, in.c, in.h, in.w, std::vector<float>(w, w + wsize),
                     std::vector<float>(b, b + K), out);
      std::copy(out.begin(), out.end(), y);
      return;
    }
    const OneDnn::Prim p = dnnl_->conv(n, in);
    using tag = OneDnn::tag;
    const dnnl::memory wm = G == 1 ? dnnl_->wrap({K, in.c, n.kernel[0], n.kernel[1]}, w, tag::oihw)
                                   : dnnl_->wrap({G, K / G, in.c / G, n.kernel[0], n.kernel[1]}, w, tag::goihw);
    dnnl_->execute(p, {{DNNL_ARG_SRC, dnnl_->wrap({in.n, in.c, in.h, in.w}, x, tag::nchw)},
                       {DNNL_ARG_WEIGHTS, wm},
                       {DNNL_ARG_BIAS, dnnl_->wrap({K}, b, tag::a)},
                       {DNNL_ARG_DST, dnnl_->wrap({in.n, K, n.out_h, n.out_w}, y, tag::nchw)}});
  }
  void pool(const PoolSpec& n, const float* x, Nchw in, float* y) override {
    if (!dnnl_) return pool_reference(n, x, in, y);
    using tag = OneDnn::tag;
    dnnl_->execute(dnnl_->pool(n, in),
                   {{DNNL_ARG_SRC, dnnl_->wrap({in.n, in.c, in.h, in.w}, x, tag::nchw)},
                    {DNNL_ARG_DST, dnnl_->wrap({in.n, in.c, n.out_h, n.out_w}, y, tag::nchw)}});
  }

 private:
  Backend& backend_ = backend_for(Device::cpu());
  std::unique_ptr<OneDnn> dnnl_;
};

}  // namespace

template <class T>
void conv_reference(const ConvSpec& n, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y) {
  const int64_t K = n.out_channels, G = n.groups, OH = n.out_h, OW = n.out_w;
  const int64_t KH = n.kernel[0], KW = n.kernel[1], cg = C / G, kg = K / G;
  SYLVA_CHECK(static_cast<int64_t>(x.size()) == N * C * H * W && static_cast<int64_t>(wt.size()) == K * cg * KH * KW &&
                  static_cast<int64_t>(b.size()) == K,
              "[cnn] conv '", n.key, "': input, weights or bias of the wrong size");
  const Act act = n.act;
  y.assign(static_cast<size_t>(N * K * OH * OW), T{0});
  for (int64_t i = 0; i < N; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t g = k / kg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = static_cast<double>(b[static_cast<size_t>(k)]);
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < KH; ++r)
              for (int64_t q = 0; q < KW; ++q) {
                const int64_t ih = oh * n.stride[0] - n.padding[0] + r, iw = ow * n.stride[1] - n.padding[1] + q;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += static_cast<double>(x[static_cast<size_t>(((i * C + g * cg + c) * H + ih) * W + iw)]) *
                     static_cast<double>(wt[static_cast<size_t>(((k * cg + c) * KH + r) * KW + q)]);
              }
          y[static_cast<size_t>(((i * K + k) * OH + oh) * OW + ow)] = activate_one(act, static_cast<T>(s));
        }
    }
}

template void conv_reference<float>(const ConvSpec&, const std::vector<float>&, int64_t, int64_t, int64_t, int64_t,
                                    const std::vector<float>&, const std::vector<float>&, std::vector<float>&);
template void conv_reference<double>(const ConvSpec&, const std::vector<double>&, int64_t, int64_t, int64_t, int64_t,
                                     const std::vector<double>&, const std::vector<double>&, std::vector<double>&);

Act act_of(const std::string& name) {
  if (name == "relu") return Act::relu;
  if (name == "sigmoid") return Act::sigmoid;
  if (name == "tanh") return Act::tanh;
  return Act::identity;
}

std::unique_ptr<CnnKernels> make_cpu_cnn_kernels(bool reference) { return std::make_unique<CpuCnnKernels>(reference); }

}  // namespace sylva::cnn
