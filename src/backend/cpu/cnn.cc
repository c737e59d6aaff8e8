// CNN operators for the IOS graphs: oneDNN primitives (created once per
// node, cached) and naive reference loops.
#include "sylva/backend/cnn.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <limits>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>

#include "sylva/core/error.h"

namespace sylva::cnn {

using ios::CnnNode;

namespace {

int64_t in_channels(const CnnNode& n) {
  int64_t c = 0;
  for (const ios::Term& t : n.inputs) c += t.front().end - t.front().begin;
  return c;
}

template <class T>
T activate(const std::string& act, T x) {
  if (act == "relu") return std::max(x, T{0});
  if (act == "sigmoid") return T{1} / (T{1} + std::exp(-x));
  if (act == "tanh") return std::tanh(x);
  return x;
}

bool global_pool(const CnnNode& n) { return n.pool_type == "global_max" || n.pool_type == "global_avg"; }
bool max_pool(const CnnNode& n) { return n.pool_type == "max" || n.pool_type == "global_max"; }

// Pooling; average pooling counts the padding (as PyTorch's default, which
// the IOS graphs come from).
void pool_reference(const CnnNode& n, const std::vector<float>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    std::vector<float>& y) {
  const bool global = global_pool(n), is_max = max_pool(n);
  const int64_t KH = global ? H : n.kernel[0], KW = global ? W : n.kernel[1];
  const int64_t SH = global ? 1 : n.stride[0], SW = global ? 1 : n.stride[1];
  const int64_t PH = global ? 0 : n.padding[0], PW = global ? 0 : n.padding[1];
  const int64_t OH = n.output_shape[1], OW = n.output_shape[2];
  y.assign(static_cast<size_t>(N * C * OH * OW), 0.0f);
  for (int64_t i = 0; i < N * C; ++i)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t r = 0; r < KH; ++r)
          for (int64_t q = 0; q < KW; ++q) {
            const int64_t ih = oh * SH - PH + r, iw = ow * SW - PW + q;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[static_cast<size_t>((i * H + ih) * W + iw)];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        y[static_cast<size_t>((i * OH + oh) * OW + ow)] =
            static_cast<float>(is_max ? acc : acc / static_cast<double>(KH * KW));
      }
}

}  // namespace

template <class T>
void conv_reference(const CnnNode& n, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y) {
  const int64_t K = n.out_channels, G = n.groups, OH = n.output_shape[1], OW = n.output_shape[2];
  const int64_t KH = n.kernel[0], KW = n.kernel[1], cg = C / G, kg = K / G;
  SYLVA_CHECK(static_cast<int64_t>(x.size()) == N * C * H * W && static_cast<int64_t>(wt.size()) == K * cg * KH * KW &&
                  static_cast<int64_t>(b.size()) == K,
              "[cnn] conv '", n.name, "': input, weights or bias of the wrong size");
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
          y[static_cast<size_t>(((i * K + k) * OH + oh) * OW + ow)] = activate(n.act, static_cast<T>(s));
        }
    }
}

template <class T>
void merge_conv_weights(const ios::MergedConv& m, const std::vector<const CnnNode*>& convs,
                        const std::vector<const std::vector<T>*>& weights,
                        const std::vector<const std::vector<T>*>& biases, std::vector<T>& w, std::vector<T>& b) {
  SYLVA_CHECK(convs.size() == m.offsets.size() && weights.size() == convs.size() && biases.size() == convs.size(),
              "[cnn] merge '", m.conv.name, "': one weight and bias tensor per member needed");
  const int64_t KH = m.conv.kernel[0], KW = m.conv.kernel[1], C = in_channels(m.conv);
  w.assign(static_cast<size_t>(m.conv.out_channels * C * KH * KW), T{0});
  b.assign(static_cast<size_t>(m.conv.out_channels), T{0});
  for (size_t j = 0; j < convs.size(); ++j) {
    const CnnNode& n = *convs[j];
    const int64_t kh = n.kernel[0], kw = n.kernel[1], dh = (KH - kh) / 2, dw = (KW - kw) / 2;
    const std::vector<T>& src = *weights[j];
    SYLVA_CHECK(static_cast<int64_t>(src.size()) == n.out_channels * C * kh * kw &&
                    static_cast<int64_t>(biases[j]->size()) == n.out_channels,
                "[cnn] merge '", m.conv.name, "': weights of '", n.name, "' have the wrong size");
    for (int64_t k = 0; k < n.out_channels; ++k) {
      const int64_t mk = m.offsets[j] + k;
      b[static_cast<size_t>(mk)] = (*biases[j])[static_cast<size_t>(k)];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < kh; ++r)
          for (int64_t q = 0; q < kw; ++q)
            w[static_cast<size_t>(((mk * C + c) * KH + r + dh) * KW + q + dw)] =
                src[static_cast<size_t>(((k * C + c) * kh + r) * kw + q)];
    }
  }
}

#define SYLVA_CNN_INSTANTIATE(T)                                                                              \
  template void conv_reference<T>(const CnnNode&, const std::vector<T>&, int64_t, int64_t, int64_t, int64_t, \
                                  const std::vector<T>&, const std::vector<T>&, std::vector<T>&);            \
  template void merge_conv_weights<T>(const ios::MergedConv&, const std::vector<const CnnNode*>&,            \
                                      const std::vector<const std::vector<T>*>&,                              \
                                      const std::vector<const std::vector<T>*>&, std::vector<T>&, std::vector<T>&);
SYLVA_CNN_INSTANTIATE(float)
SYLVA_CNN_INSTANTIATE(double)
#undef SYLVA_CNN_INSTANTIATE

// oneDNN: one engine and one primitive per node, created on first use.
// Primitives take their scratchpad from the caller (scratchpad_mode::user):
// oneDNN's own is shared by all primitives, so concurrent groups would
// overwrite each other's.
struct CnnRunner::Impl_ {
  struct Prim {
    dnnl::primitive p;
    dnnl::memory::desc scratchpad;
  };
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex m;
  std::map<std::string, Prim> prims;

  using dims = dnnl::memory::dims;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;

  Prim conv(const CnnNode& n, int64_t N, int64_t C, int64_t H, int64_t W) {
    std::lock_guard<std::mutex> lock(m);
    if (auto it = prims.find(n.name); it != prims.end()) return it->second;
    const int64_t K = n.out_channels, G = n.groups;
    const dnnl::memory::desc src({N, C, H, W}, dt::f32, tag::nchw);
    const dnnl::memory::desc wei = G == 1 ? dnnl::memory::desc({K, C, n.kernel[0], n.kernel[1]}, dt::f32, tag::oihw)
                                          : dnnl::memory::desc({G, K / G, C / G, n.kernel[0], n.kernel[1]}, dt::f32,
                                                               tag::goihw);
    const dnnl::memory::desc bias({K}, dt::f32, tag::a);
    const dnnl::memory::desc dst({N, K, n.output_shape[1], n.output_shape[2]}, dt::f32, tag::nchw);
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                            src, wei, bias, dst, {n.stride[0], n.stride[1]}, {0, 0},
                                            {n.padding[0], n.padding[1]}, {n.padding[0], n.padding[1]});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (n.act != "identity") {
      dnnl::post_ops po;
      const dnnl::algorithm alg = n.act == "relu"      ? dnnl::algorithm::eltwise_relu
                                  : n.act == "sigmoid" ? dnnl::algorithm::eltwise_logistic
                                                       : dnnl::algorithm::eltwise_tanh;
      po.append_eltwise(1.0f, alg, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    const dnnl::convolution_forward::primitive_desc pd(d, attr, engine);
    return prims.emplace(n.name, Prim{dnnl::convolution_forward(pd), pd.scratchpad_desc()}).first->second;
  }

  Prim pool(const CnnNode& n, int64_t N, int64_t C, int64_t H, int64_t W) {
    std::lock_guard<std::mutex> lock(m);
    if (auto it = prims.find(n.name); it != prims.end()) return it->second;
    const bool global = global_pool(n);
    const dnnl::memory::desc src({N, C, H, W}, dt::f32, tag::nchw);
    const dnnl::memory::desc dst({N, C, n.output_shape[1], n.output_shape[2]}, dt::f32, tag::nchw);
    const dims kernel = global ? dims{H, W} : dims{n.kernel[0], n.kernel[1]};
    const dims stride = global ? dims{1, 1} : dims{n.stride[0], n.stride[1]};
    const dims pad = global ? dims{0, 0} : dims{n.padding[0], n.padding[1]};
    const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference,
                                        max_pool(n) ? dnnl::algorithm::pooling_max
                                                    : dnnl::algorithm::pooling_avg_include_padding,
                                        src, dst, stride, kernel, pad, pad);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::pooling_forward::primitive_desc pd(d, attr, engine);
    return prims.emplace(n.name, Prim{dnnl::pooling_forward(pd), pd.scratchpad_desc()}).first->second;
  }

  // Runs a primitive on a stream of this thread (oneDNN streams are not
  // shared across threads), with this thread's scratchpad.
  void execute(const Prim& prim, std::unordered_map<int, dnnl::memory> args) {
    thread_local std::vector<char> scratch;
    if (scratch.size() < prim.scratchpad.get_size()) scratch.resize(prim.scratchpad.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(prim.scratchpad, engine, scratch.data()));
    dnnl::stream s(engine);
    prim.p.execute(s, args);
    s.wait();
  }
  dnnl::memory wrap(const std::vector<int64_t>& d, const float* data, tag t) {
    return dnnl::memory({d, dt::f32, t}, engine, const_cast<float*>(data));
  }
};

CnnRunner::CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, Impl impl)
    : g_(g), batch_(batch), impl_(impl) {
  SYLVA_CHECK(batch >= 1, "[cnn] batch must be >= 1, got ", batch);
  if (impl == Impl::onednn) dnnl_ = std::make_unique<Impl_>();
  std::mt19937_64 rng(seed);
  const auto add = [&](const CnnNode& n, const auto& self) -> void {
    values_[n.name];
    nodes_.emplace(n.name, &n);
    for (const CnnNode& m : n.nodes) self(m, self);
    if (n.type != "conv") return;
    const int64_t C = in_channels(n), fan_in = C / n.groups * n.kernel[0] * n.kernel[1];
    SYLVA_CHECK(C % n.groups == 0, "[cnn] conv '", n.name, "' has ", C, " input channels, not divisible by groups ",
                n.groups);
    std::uniform_real_distribution<float> u(-1.0f / std::sqrt(static_cast<float>(fan_in)),
                                            1.0f / std::sqrt(static_cast<float>(fan_in)));
    auto& w = weights_[n.name];
    w.resize(static_cast<size_t>(n.out_channels * fan_in));
    for (float& v : w) v = u(rng);
    auto& b = bias_[n.name];
    b.resize(static_cast<size_t>(n.out_channels));
    for (float& v : b) v = u(rng);
  };
  add(g.input, add);
  for (const ios::CnnBlock& b : g.blocks) {
    add(b.enter, add);
    for (const CnnNode* n : b.ops()) add(*n, add);
  }
  std::vector<float>& x = values_[g.input.name];
  x.resize(static_cast<size_t>(batch * g.input.output_shape[0] * g.input.output_shape[1] * g.input.output_shape[2]));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
}

CnnRunner::~CnnRunner() = default;

std::vector<float>& CnnRunner::slot(const std::string& name) {
  auto it = values_.find(name);
  SYLVA_CHECK(it != values_.end(), "[cnn] no node '", name, "' in graph '", g_.name, "'");
  return it->second;
}

const std::vector<float>& CnnRunner::value(const std::string& name) const {
  auto it = values_.find(name);
  SYLVA_CHECK(it != values_.end() && !it->second.empty(), "[cnn] node '", name, "' has no value (not run yet?)");
  return it->second;
}

// The node's input: its terms concatenated along channels, each term the
// sum of its values (channel slices of earlier outputs).
std::vector<float> CnnRunner::gather(const CnnNode& n, int64_t& channels, int64_t& h, int64_t& w) const {
  channels = in_channels(n);
  h = w = -1;
  std::vector<float> out;
  int64_t c0 = 0;
  for (const ios::Term& t : n.inputs) {
    const int64_t tc = t.front().end - t.front().begin;
    for (const ios::ValueRef& v : t) {
      SYLVA_CHECK(v.end - v.begin == tc, "[cnn] node '", n.name, "': the values of one input term differ in channels");
      const std::vector<float>& src = value(v.node);
      const CnnNode* producer = nodes_.at(v.node);
      const int64_t C = producer->output_shape[0], H = producer->output_shape[1], W = producer->output_shape[2];
      SYLVA_CHECK(v.end <= C, "[cnn] node '", n.name, "' reads channels [", v.begin, ", ", v.end, ") of '", v.node,
                  "', which has ", C);
      if (h < 0) {
        h = H;
        w = W;
        out.assign(static_cast<size_t>(batch_ * channels * h * w), 0.0f);
      }
      SYLVA_CHECK(H == h && W == w, "[cnn] node '", n.name, "' concatenates inputs of different sizes (", h, "x", w,
                  " and ", H, "x", W, ")");
      for (int64_t i = 0; i < batch_; ++i)
        for (int64_t c = 0; c < tc; ++c) {
          const float* s = src.data() + ((i * C + v.begin + c) * H) * W;
          float* d = out.data() + ((i * channels + c0 + c) * h) * w;
          for (int64_t k = 0; k < h * w; ++k) d[k] += s[k];
        }
    }
    c0 += tc;
  }
  return out;
}

void CnnRunner::run(const CnnNode& n) {
  std::vector<float>& y = slot(n.name);
  if (n.type == "placeholder") return;
  if (n.type == "sequential") {
    for (const CnnNode& m : n.nodes) run(m);
    y = value(n.nodes.back().name);
    return;
  }
  int64_t C = 0, H = 0, W = 0;
  std::vector<float> x;
  const float* src = n.type == "conv" || n.type == "pool" ? input(n, x, C, H, W) : (x = gather(n, C, H, W)).data();
  const int64_t N = batch_;
  if (n.type == "identity") {
    y = std::move(x);
  } else if (n.type == "relu" || n.type == "activation") {
    const std::string act = n.type == "relu" ? "relu" : n.op;
    for (float& v : x) v = activate(act, v);
    y = std::move(x);
  } else if (n.type == "element") {
    // Each term is one operand with the node's channels (no graph here uses this type).
    SYLVA_CHECK(n.inputs.size() >= 2 && C % static_cast<int64_t>(n.inputs.size()) == 0, "[cnn] element node '",
                n.name, "' needs two or more terms of equal channels");
    const int64_t tc = C / static_cast<int64_t>(n.inputs.size());
    y.assign(static_cast<size_t>(N * tc * H * W), n.op == "mul" ? 1.0f : 0.0f);
    for (int64_t i = 0; i < N; ++i)
      for (size_t t = 0; t < n.inputs.size(); ++t)
        for (int64_t k = 0; k < tc * H * W; ++k) {
          const float v = x[static_cast<size_t>((i * C + static_cast<int64_t>(t) * tc) * H * W + k)];
          float& o = y[static_cast<size_t>(i * tc * H * W + k)];
          o = n.op == "mul" ? o * v : o + v;
        }
  } else if (n.type == "conv") {
    conv(n, src, C, H, W, weights_.at(n.name), bias_.at(n.name), y);
  } else if (n.type == "pool") {
    if (impl_ == Impl::reference) {
      pool_reference(n, x, N, C, H, W, y);
    } else {
      y.resize(static_cast<size_t>(N * C * n.output_shape[1] * n.output_shape[2]));
      dnnl_->execute(dnnl_->pool(n, N, C, H, W),
                     {{DNNL_ARG_SRC, dnnl_->wrap({N, C, H, W}, src, dnnl::memory::format_tag::nchw)},
                      {DNNL_ARG_DST, dnnl_->wrap({N, C, n.output_shape[1], n.output_shape[2]}, y.data(),
                                                 dnnl::memory::format_tag::nchw)}});
    }
  } else {
    SYLVA_THROW("[cnn] node '", n.name, "' has type '", n.type, "', which has no CPU operator");
  }
  SYLVA_CHECK(static_cast<int64_t>(y.size()) == N * n.output_shape[0] * n.output_shape[1] * n.output_shape[2],
              "[cnn] node '", n.name, "' computed ", y.size() / static_cast<size_t>(N), " values per sample but "
              "declares output_shape [", n.output_shape[0], ", ", n.output_shape[1], ", ", n.output_shape[2], "]");
}

const float* CnnRunner::input(const CnnNode& n, std::vector<float>& x, int64_t& C, int64_t& H, int64_t& W) const {
  const bool whole = n.inputs.size() == 1 && n.inputs[0].size() == 1 && n.inputs[0][0].begin == 0 &&
                     n.inputs[0][0].end == nodes_.at(n.inputs[0][0].node)->output_shape[0];
  if (impl_ == Impl::reference || !whole) {
    x = gather(n, C, H, W);
    return x.data();
  }
  const CnnNode& producer = *nodes_.at(n.inputs[0][0].node);
  C = producer.output_shape[0];
  H = producer.output_shape[1];
  W = producer.output_shape[2];
  return value(producer.name).data();
}

void CnnRunner::conv(const CnnNode& n, const float* src, int64_t C, int64_t H, int64_t W, const std::vector<float>& wt,
                     const std::vector<float>& b, std::vector<float>& y) {
  const int64_t N = batch_;
  if (impl_ == Impl::reference) {
    conv_reference(n, std::vector<float>(src, src + N * C * H * W), N, C, H, W, wt, b, y);
    return;
  }
  y.resize(static_cast<size_t>(N * n.out_channels * n.output_shape[1] * n.output_shape[2]));  // oneDNN writes all
  const Impl_::Prim p = dnnl_->conv(n, N, C, H, W);
  using tag = dnnl::memory::format_tag;
  const dnnl::memory wm =
      n.groups == 1 ? dnnl_->wrap({n.out_channels, C, n.kernel[0], n.kernel[1]}, wt.data(), tag::oihw)
                    : dnnl_->wrap({n.groups, n.out_channels / n.groups, C / n.groups, n.kernel[0], n.kernel[1]},
                                  wt.data(), tag::goihw);
  dnnl_->execute(p, {{DNNL_ARG_SRC, dnnl_->wrap({N, C, H, W}, src, tag::nchw)},
                     {DNNL_ARG_WEIGHTS, wm},
                     {DNNL_ARG_BIAS, dnnl_->wrap({n.out_channels}, b.data(), tag::a)},
                     {DNNL_ARG_DST, dnnl_->wrap({N, n.out_channels, n.output_shape[1], n.output_shape[2]}, y.data(),
                                                tag::nchw)}});
}

void CnnRunner::run_merged(const std::vector<const CnnNode*>& convs) {
  Merged* mg = nullptr;
  {
    std::string key;
    for (const CnnNode* n : convs) key += (key.empty() ? "" : "+") + n->name;
    std::lock_guard<std::mutex> lock(merged_mutex_);
    std::unique_ptr<Merged>& entry = merged_[key];
    if (!entry) {
      std::string why;
      std::optional<ios::MergedConv> m = ios::merge_convs(convs, &why);
      SYLVA_CHECK(m, "[cnn] cannot merge ", key, ": ", why);
      auto made = std::make_unique<Merged>();
      made->m = std::move(*m);
      std::vector<const std::vector<float>*> w, b;
      for (const CnnNode* n : convs) {
        w.push_back(&weights_.at(n->name));
        b.push_back(&bias_.at(n->name));
      }
      merge_conv_weights(made->m, convs, w, b, made->w, made->b);
      entry = std::move(made);
    }
    mg = entry.get();
  }
  int64_t C = 0, H = 0, W = 0;
  std::vector<float> x;
  const float* src = input(mg->m.conv, x, C, H, W);
  conv(mg->m.conv, src, C, H, W, mg->w, mg->b, mg->y);
  // Each member's channels, [offset, offset + K) of the merged output.
  const int64_t KM = mg->m.conv.out_channels, HW = mg->m.conv.output_shape[1] * mg->m.conv.output_shape[2];
  for (size_t j = 0; j < convs.size(); ++j) {
    const int64_t K = convs[j]->out_channels;
    std::vector<float>& y = slot(convs[j]->name);
    y.resize(static_cast<size_t>(batch_ * K * HW));
    for (int64_t i = 0; i < batch_; ++i)
      std::copy_n(mg->y.begin() + (i * KM + mg->m.offsets[j]) * HW, K * HW, y.begin() + i * K * HW);
  }
}

void CnnRunner::run_all() {
  for (const ios::CnnBlock& b : g_.blocks) {
    if (values_.at(b.enter.name).empty()) run(b.enter);
    for (const CnnNode* n : b.ops()) run(*n);
  }
}

namespace {

// Runs the operators of group `g` (in topological order) with `threads`
// threads for each operator.
void run_group(CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part, ios::OpSet g,
               int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  for (int v : part.dag.topo_order())
    if (g >> v & 1) r.run(*ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
  omp_set_num_threads(before);
}

// Persistent threads for the groups of concurrent stages: creating a
// thread per group and stage cost more than the small operators it runs,
// and each new thread starts with cold oneDNN and OpenMP state.
class GroupPool {
 public:
  ~GroupPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  // Runs jobs[0] on the caller and jobs[k] on worker k - 1; rethrows the
  // first error. Callers from several threads take turns.
  void run(const std::vector<std::function<void()>>& jobs) {
    std::lock_guard<std::mutex> turn(busy_);
    std::unique_lock<std::mutex> lock(m_);
    while (threads_.size() + 1 < jobs.size()) {
      const size_t k = threads_.size();
      threads_.emplace_back([this, k] { loop(k); });
    }
    jobs_ = &jobs;
    errors_.assign(jobs.size(), nullptr);
    pending_ = static_cast<int>(jobs.size()) - 1;
    ++generation_;
    lock.unlock();
    work_.notify_all();
    try {
      jobs[0]();
    } catch (...) {
      errors_[0] = std::current_exception();
    }
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
    jobs_ = nullptr;
    for (const std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
  void loop(size_t k) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!jobs_ || k + 1 >= jobs_->size()) continue;  // not needed this time
      const std::function<void()>& job = (*jobs_)[k + 1];
      lock.unlock();
      std::exception_ptr err;
      try {
        job();
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      errors_[k + 1] = err;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex busy_, m_;
  std::condition_variable work_, done_;
  std::vector<std::thread> threads_;
  const std::vector<std::function<void()>>* jobs_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

GroupPool& group_pool() {
  static GroupPool pool;
  return pool;
}

void run_stage(CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part,
               const ios::Stage& st, int cores) {
  if (st.kind == ios::Stage::Kind::merged) {
    std::vector<const CnnNode*> convs;
    for (int v : part.dag.topo_order())
      if (st.groups[0] >> v & 1) convs.push_back(ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
    const int before = omp_get_max_threads();
    omp_set_num_threads(cores);
    r.run_merged(convs);
    omp_set_num_threads(before);
    return;
  }
  if (st.groups.size() == 1) {
    run_group(r, ops, part, st.groups[0], cores);
    return;
  }
  const int each = std::max(1, cores / static_cast<int>(st.groups.size()));
  std::vector<std::function<void()>> jobs;
  for (ios::OpSet g : st.groups) jobs.push_back([&, g] { run_group(r, ops, part, g, each); });
  group_pool().run(jobs);
}

}  // namespace

void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores) {
  SYLVA_CHECK(cores >= 1, "[cnn] cores must be >= 1, got ", cores);
  const std::vector<const CnnNode*> ops = block.ops();
  for (const ios::Stage& st : plan.stages) run_stage(runner, ops, part, st, cores);
}

double ProfilingCost::latency(const ios::OpDag&, const ios::Stage& stage) {
  if (auto it = cache_.find(stage.groups); it != cache_.end()) return it->second;
  SYLVA_CHECK(repeats_ >= 1, "[cnn] profiling needs at least one repeat, got ", repeats_);
  const std::vector<const CnnNode*> ops = block_.ops();
  std::vector<double> t;
  for (int k = 0; k <= repeats_; ++k) {
    const auto start = std::chrono::steady_clock::now();
    run_stage(runner_, ops, part_, stage, cores_);
    if (k > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return cache_[stage.groups] = t[t.size() / 2];
}

bool ProfilingCost::mergeable(const ios::OpDag& dag, ios::OpSet ops) {
  const std::vector<const CnnNode*> all = block_.ops();
  std::vector<const CnnNode*> convs;
  for (int v = 0; v < dag.size(); ++v)
    if (ops >> v & 1) convs.push_back(all[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])]);
  return ios::merge_convs(convs).has_value();
}

}  // namespace sylva::cnn
