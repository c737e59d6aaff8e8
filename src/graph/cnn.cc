// The CNN runner: the graph logic of the IOS graphs (which channel slices
// feed which node, sequential nodes, merged convolutions) over a backend's
// CNN kernels (sylva/backend/cnn_kernels.h), with values in the backend's
// memory. IOS plans and the profiling cost model: cnn_plan.cc.
#include <algorithm>
#include <functional>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "sylva/core/error.h"
#include "sylva/graph/cnn.h"
#include "sylva/graph/cnn_cosa.h"

namespace sylva::cnn {

using ios::CnnNode;

namespace {

int64_t in_channels(const CnnNode& n) {
  int64_t c = 0;
  for (const ios::Term& t : n.inputs) c += t.front().end - t.front().begin;
  return c;
}

// Output rows or columns of a window sliding over `in` (PyTorch's floor rule).
int64_t slid(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return stride < 1 ? -1 : (in + 2 * padding - kernel) / stride + 1;
}

}  // namespace

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

template void merge_conv_weights<float>(const ios::MergedConv&, const std::vector<const CnnNode*>&,
                                        const std::vector<const std::vector<float>*>&,
                                        const std::vector<const std::vector<float>*>&, std::vector<float>&,
                                        std::vector<float>&);
template void merge_conv_weights<double>(const ios::MergedConv&, const std::vector<const CnnNode*>&,
                                         const std::vector<const std::vector<double>*>&,
                                         const std::vector<const std::vector<double>*>&, std::vector<double>&,
                                         std::vector<double>&);

ConvSpec conv_spec(const CnnNode& n) {
  return {n.name, n.out_channels, n.groups, n.kernel, n.stride, n.padding, n.output_shape[1], n.output_shape[2],
          act_of(n.act)};
}

PoolSpec pool_spec(const CnnNode& n) {
  return {n.name,
          n.pool_type == "max" || n.pool_type == "global_max",
          n.pool_type == "global_max" || n.pool_type == "global_avg",
          n.kernel,
          n.stride,
          n.padding,
          n.output_shape[1],
          n.output_shape[2]};
}

template <class T>
void conv_reference(const CnnNode& n, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y) {
  conv_reference(conv_spec(n), x, N, C, H, W, wt, b, y);
}

template void conv_reference<float>(const CnnNode&, const std::vector<float>&, int64_t, int64_t, int64_t, int64_t,
                                    const std::vector<float>&, const std::vector<float>&, std::vector<float>&);
template void conv_reference<double>(const CnnNode&, const std::vector<double>&, int64_t, int64_t, int64_t, int64_t,
                                     const std::vector<double>&, const std::vector<double>&, std::vector<double>&);

struct CnnRunner::State {
  // A node's output, allocated once in the backend's memory.
  struct Value {
    Buffer data;
    Nchw dims;
    bool set = false;
    float* ptr() { return static_cast<float*>(data.data()); }
  };
  // One channel slice of an earlier output moved into a node's input.
  struct Piece {
    const std::string* name;  // the source's (a key of `values`)
    Value* src;
    int64_t src_c0, dst_c0, channels;
    bool add;  // a later value of the same term: summed into the first
  };
  // How a node's input is assembled: its terms concatenated along
  // channels, each term the sum of its values. `whole` when it is exactly
  // one earlier output (then read in place). A conv or pool node's layer
  // is described once, here.
  struct Input {
    Nchw dims;
    std::vector<Piece> pieces;
    Value* whole = nullptr;
    Buffer scratch;  // gathered here when a conv, pool or element node's input is not whole
    ConvSpec conv;
    PoolSpec pool;
  };
  // A merged convolution: its weights (host, and in the backend's memory),
  // its output and its input.
  struct Merged {
    ios::MergedConv m;
    std::vector<float> w, b;
    Buffer dw, db;
    Value y;
    Input in;
  };

  std::unique_ptr<CnnKernels> kernels;
  Backend* backend = nullptr;                         // the kernels'
  std::map<std::string, Value> values;                 // every node's, created up front
  std::map<std::string, const CnnNode*> nodes;        // by name, sequential nodes' members included
  std::map<std::string, Input> inputs;                // of every node that reads any
  std::map<std::string, std::vector<float>> weights, bias;  // host copies (merging builds on them)
  std::map<std::string, Buffer> dev_weights, dev_bias;       // copies in the backend's memory, if not host-visible
  std::mutex merged_mutex;
  std::map<std::string, std::unique_ptr<Merged>> merged;  // by merged name

  Value& value_of(const std::string& name) {
    auto it = values.find(name);
    SYLVA_CHECK(it != values.end(), "[cnn] no node '", name, "'");
    return it->second;
  }
  Buffer buffer(int64_t count) {
    Buffer b(backend->memory());
    b.reserve(static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float));
    return b;
  }
  // Weights in the backend's memory: the host vector itself on the CPU.
  const float* device(const std::vector<float>& host, Buffer& copy) {
    if (backend->memory().host_visible()) return host.data();
    if (!copy.data()) {
      copy = buffer(static_cast<int64_t>(host.size()));
      backend->upload(copy.data(), host.data(), host.size() * sizeof(float));
    }
    return static_cast<const float*>(copy.data());
  }

  Input plan_input(const CnnNode& n, int64_t batch) {
    Input in;
    in.dims = {batch, in_channels(n), -1, -1};
    int64_t c0 = 0;
    for (const ios::Term& t : n.inputs) {
      const int64_t tc = t.front().end - t.front().begin;
      for (size_t k = 0; k < t.size(); ++k) {
        const ios::ValueRef& v = t[k];
        SYLVA_CHECK(v.end - v.begin == tc, "[cnn] node '", n.name,
                    "': the values of one input term differ in channels");
        auto it = nodes.find(v.node);
        SYLVA_CHECK(it != nodes.end(), "[cnn] node '", n.name, "' reads '", v.node, "', which is not in the graph");
        const std::array<int64_t, 3>& shape = it->second->output_shape;
        SYLVA_CHECK(v.begin >= 0 && v.begin < v.end && v.end <= shape[0], "[cnn] node '", n.name,
                    "' reads channels [", v.begin, ", ", v.end, ") of '", v.node, "', which has ", shape[0]);
        if (in.dims.h < 0) {
          in.dims.h = shape[1];
          in.dims.w = shape[2];
        }
        SYLVA_CHECK(shape[1] == in.dims.h && shape[2] == in.dims.w, "[cnn] node '", n.name,
                    "' concatenates inputs of different sizes (", in.dims.h, "x", in.dims.w, " and ", shape[1], "x",
                    shape[2], ")");
        auto at = values.find(v.node);
        in.pieces.push_back({&at->first, &at->second, v.begin, c0, tc, k > 0});
      }
      c0 += tc;
    }
    SYLVA_CHECK(!in.pieces.empty(), "[cnn] node '", n.name, "' (", n.type, ") has no inputs");
    const Piece& p = in.pieces[0];
    if (in.pieces.size() == 1 && p.src_c0 == 0 && p.channels == p.src->dims.c) in.whole = p.src;
    if ((n.type == "conv" || n.type == "pool") ? !in.whole : n.type == "element") in.scratch = buffer(in.dims.size());
    if (n.type == "conv") in.conv = conv_spec(n);
    if (n.type == "pool") in.pool = pool_spec(n);
    return in;
  }

  // The node's input, gathered into `dst` (or read in place when whole and
  // dst is null).
  const float* gather(const CnnNode& n, const Input& in, float* dst) {
    for (const Piece& p : in.pieces)
      SYLVA_CHECK(p.src->set, "[cnn] node '", *p.name, "' has no value (node '", n.name, "' reads it; not run yet?)");
    if (!dst) return in.whole->ptr();
    for (const Piece& p : in.pieces)
      kernels->move_channels(p.src->ptr(), p.src->dims.c, p.src_c0, dst, in.dims.c, p.dst_c0, p.channels, in.dims.n,
                             in.dims.h * in.dims.w, p.add);
    return dst;
  }
  const float* conv_input(const CnnNode& n, Input& in) {
    return gather(n, in, in.whole ? nullptr : static_cast<float*>(in.scratch.data()));
  }
};

CnnRunner::CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, Impl impl)
    : g_(g), batch_(batch), impl_(impl), s_(std::make_unique<State>()) {
  SYLVA_CHECK(batch >= 1, "[cnn] batch must be >= 1, got ", batch);
  SYLVA_CHECK(impl != Impl::custom, "[cnn] Impl::custom needs the constructor that takes the kernels");
  if (impl == Impl::cosa || impl == Impl::cosa_pick)
    s_->kernels = std::make_unique<CosaCnnKernels>(impl == Impl::cosa ? CosaCnnKernels::Mode::cosa
                                                                      : CosaCnnKernels::Mode::pick);
  else
    s_->kernels = impl == Impl::cudnn ? make_cudnn_cnn_kernels() : make_cpu_cnn_kernels(impl == Impl::reference);
  init(seed);
}

CnnRunner::CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, std::unique_ptr<CnnKernels> kernels)
    : g_(g), batch_(batch), impl_(Impl::custom), s_(std::make_unique<State>()) {
  SYLVA_CHECK(batch >= 1, "[cnn] batch must be >= 1, got ", batch);
  SYLVA_CHECK(kernels != nullptr, "[cnn] no kernels given (null unique_ptr)");
  s_->kernels = std::move(kernels);
  init(seed);
}

void CnnRunner::init(uint64_t seed) {
  State& s = *s_;
  s.backend = &s.kernels->backend();
  const ios::CnnGraph& g = g_;
  const int64_t batch = batch_;
  std::vector<const CnnNode*> order;
  std::mt19937_64 rng(seed);
  const auto add = [&](const CnnNode& n, const auto& self) -> void {
    if (!s.nodes.emplace(n.name, &n).second) return;  // a block's enter node is the previous block's exit
    order.push_back(&n);
    const Nchw dims{batch, n.output_shape[0], n.output_shape[1], n.output_shape[2]};
    SYLVA_CHECK(dims.c >= 1 && dims.h >= 1 && dims.w >= 1, "[cnn] node '", n.name, "' has output_shape [", dims.c,
                ", ", dims.h, ", ", dims.w, "]");
    State::Value& value = s.values[n.name];
    value.data = s.buffer(dims.size());
    value.dims = dims;
    for (const CnnNode& m : n.nodes) self(m, self);
    if (n.type != "conv") return;
    const int64_t C = in_channels(n), fan_in = C / n.groups * n.kernel[0] * n.kernel[1];
    SYLVA_CHECK(n.groups >= 1 && C % n.groups == 0 && n.out_channels % n.groups == 0, "[cnn] conv '", n.name,
                "' has ", C, " input and ", n.out_channels, " output channels, not both divisible by groups ",
                n.groups);
    std::uniform_real_distribution<float> u(-1.0f / std::sqrt(static_cast<float>(fan_in)),
                                            1.0f / std::sqrt(static_cast<float>(fan_in)));
    auto& w = s.weights[n.name];
    w.resize(static_cast<size_t>(n.out_channels * fan_in));
    for (float& v : w) v = u(rng);
    auto& b = s.bias[n.name];
    b.resize(static_cast<size_t>(n.out_channels));
    for (float& v : b) v = u(rng);
  };
  add(g.input, add);
  for (const ios::CnnBlock& b : g.blocks) {
    add(b.enter, add);
    for (const CnnNode* n : b.ops()) add(*n, add);
  }
  // Inputs, once every node is known; the output shapes they imply.
  for (const CnnNode* n : order) {
    if (n->type == "placeholder" || n->type == "sequential") continue;
    State::Input& in = s.inputs[n->name] = s.plan_input(*n, batch);
    const std::array<int64_t, 3>& o = n->output_shape;
    std::array<int64_t, 3> want = o;
    if (n->type == "conv") {
      want = {n->out_channels, slid(in.dims.h, n->kernel[0], n->stride[0], n->padding[0]),
              slid(in.dims.w, n->kernel[1], n->stride[1], n->padding[1])};
    } else if (n->type == "pool") {
      const bool global = n->pool_type == "global_max" || n->pool_type == "global_avg";
      want = {in.dims.c, global ? 1 : slid(in.dims.h, n->kernel[0], n->stride[0], n->padding[0]),
              global ? 1 : slid(in.dims.w, n->kernel[1], n->stride[1], n->padding[1])};
    } else if (n->type == "element") {
      const auto terms = static_cast<int64_t>(n->inputs.size());
      SYLVA_CHECK(terms >= 2 && in.dims.c % terms == 0, "[cnn] element node '", n->name,
                  "' needs two or more terms of equal channels");
      want = {in.dims.c / terms, in.dims.h, in.dims.w};
    } else if (n->type == "identity" || n->type == "relu" || n->type == "activation") {
      want = {in.dims.c, in.dims.h, in.dims.w};
    } else {
      SYLVA_THROW("[cnn] node '", n->name, "' has type '", n->type, "', which has no operator");
    }
    SYLVA_CHECK(want == o, "[cnn] node '", n->name, "' (", n->type, ") computes [", want[0], ", ", want[1], ", ",
                want[2], "] per sample but declares output_shape [", o[0], ", ", o[1], ", ", o[2], "]");
  }
  std::vector<float> x(static_cast<size_t>(s.values.at(g.input.name).dims.size()));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
  State::Value& input = s.values.at(g.input.name);
  s.backend->upload(input.ptr(), x.data(), x.size() * sizeof(float));
  input.set = true;
  for (const auto& [name, w] : s.weights) {  // into device memory now, not inside a timed stage
    s.device(w, s.dev_weights[name]);
    s.device(s.bias.at(name), s.dev_bias[name]);
  }
}

CnnRunner::~CnnRunner() = default;

std::vector<float> CnnRunner::value(const std::string& name) const {
  auto it = s_->values.find(name);
  SYLVA_CHECK(it != s_->values.end(), "[cnn] no node '", name, "' in graph '", g_.name, "'");
  SYLVA_CHECK(it->second.set, "[cnn] node '", name, "' has no value (not run yet?)");
  std::vector<float> out(static_cast<size_t>(it->second.dims.size()));
  s_->backend->download(out.data(), it->second.data.data(), out.size() * sizeof(float));
  return out;
}

void CnnRunner::synchronize() { s_->backend->synchronize(); }

Backend& CnnRunner::backend() const { return *s_->backend; }

void CnnRunner::read_inputs(const std::vector<const CnnNode*>& nodes) const {
  if (!backend().memory().host_visible()) return;
  float sum = 0;
  const std::function<void(const CnnNode&)> visit = [&](const CnnNode& n) {
    for (const CnnNode& m : n.nodes) visit(m);
    const auto in = s_->inputs.find(n.name);
    if (in == s_->inputs.end()) return;
    for (const State::Piece& p : in->second.pieces) {
      const float* x = p.src->ptr();
      for (int64_t i = 0, size = p.src->dims.size(); i < size; i += 16) sum += x[i];  // a float per cache line
    }
  };
  for (const CnnNode* n : nodes) visit(*n);
  static std::atomic<float> sink{0};
  sink.store(sum, std::memory_order_relaxed);
}

size_t CnnRunner::working_set_bytes() const {
  size_t floats = 0;
  for (const auto& [name, v] : s_->values) floats += static_cast<size_t>(v.dims.n * v.dims.c * v.dims.h * v.dims.w);
  for (const auto* table : {&s_->weights, &s_->bias})
    for (const auto& [name, w] : *table) floats += w.size();
  return floats * sizeof(float);
}
CnnKernels& CnnRunner::kernels() const { return *s_->kernels; }

void CnnRunner::run(const CnnNode& n) {
  State& s = *s_;
  State::Value& y = s.value_of(n.name);
  CnnKernels& k = *s.kernels;
  if (n.type == "placeholder") {
    SYLVA_CHECK(y.set, "[cnn] placeholder '", n.name, "' has no value (run the block before it first)");
    return;
  }
  if (n.type == "sequential") {
    for (const CnnNode& m : n.nodes) run(m);
    SYLVA_CHECK(!n.nodes.empty(), "[cnn] sequential node '", n.name, "' has no members");
    State::Value& last = s.value_of(n.nodes.back().name);
    SYLVA_CHECK(last.dims.size() == y.dims.size(), "[cnn] sequential node '", n.name, "' declares another shape than ",
                "its last member '", n.nodes.back().name, "'");
    k.move_channels(last.ptr(), last.dims.c, 0, y.ptr(), y.dims.c, 0, y.dims.c, y.dims.n, y.dims.h * y.dims.w, false);
    y.set = true;
    return;
  }
  State::Input& in = s.inputs.at(n.name);
  if (n.type == "conv") {
    k.conv(in.conv, s.conv_input(n, in), in.dims, s.device(s.weights.at(n.name), s.dev_weights.at(n.name)),
           s.device(s.bias.at(n.name), s.dev_bias.at(n.name)), y.ptr());
  } else if (n.type == "pool") {
    k.pool(in.pool, s.conv_input(n, in), in.dims, y.ptr());
  } else if (n.type == "element") {
    const auto terms = static_cast<int64_t>(n.inputs.size());
    k.element(s.gather(n, in, static_cast<float*>(in.scratch.data())), y.ptr(), in.dims.n, terms,
              in.dims.size() / in.dims.n / terms, n.op == "mul");
  } else {  // identity, relu, activation: the gathered input, activated in place
    s.gather(n, in, y.ptr());
    if (n.type != "identity") k.activate(y.ptr(), y.dims.size(), act_of(n.type == "relu" ? "relu" : n.op));
  }
  y.set = true;
}

void CnnRunner::run_merged(const std::vector<const CnnNode*>& convs) {
  State& s = *s_;
  State::Merged* mg = nullptr;
  {
    std::string key;
    for (const CnnNode* n : convs) key += (key.empty() ? "" : "+") + n->name;
    std::lock_guard<std::mutex> lock(s.merged_mutex);
    std::unique_ptr<State::Merged>& entry = s.merged[key];
    if (!entry) {
      std::string why;
      std::optional<ios::MergedConv> m = ios::merge_convs(convs, &why);
      if (!m) {
        s.merged.erase(key);
        SYLVA_THROW("[cnn] cannot merge ", key, ": ", why);
      }
      auto made = std::make_unique<State::Merged>();
      made->m = std::move(*m);
      std::vector<const std::vector<float>*> w, b;
      for (const CnnNode* n : convs) {
        w.push_back(&s.weights.at(n->name));
        b.push_back(&s.bias.at(n->name));
      }
      merge_conv_weights(made->m, convs, w, b, made->w, made->b);
      const CnnNode& c = made->m.conv;
      made->y.dims = {batch_, c.out_channels, c.output_shape[1], c.output_shape[2]};
      made->y.data = s.buffer(made->y.dims.size());
      made->in = s.plan_input(c, batch_);
      entry = std::move(made);
    }
    mg = entry.get();
  }
  const CnnNode& c = mg->m.conv;
  s.kernels->conv(mg->in.conv, s.conv_input(c, mg->in), mg->in.dims, s.device(mg->w, mg->dw),
                  s.device(mg->b, mg->db), mg->y.ptr());
  // Each member's channels, [offset, offset + K) of the merged output.
  const Nchw& m = mg->y.dims;
  for (size_t j = 0; j < convs.size(); ++j) {
    State::Value& y = s.value_of(convs[j]->name);
    s.kernels->move_channels(mg->y.ptr(), m.c, mg->m.offsets[j], y.ptr(), y.dims.c, 0, y.dims.c, m.n, m.h * m.w,
                             false);
    y.set = true;
  }
}

void CnnRunner::run_all() {
  for (const ios::CnnBlock& b : g_.blocks) {
    if (!s_->values.at(b.enter.name).set) run(b.enter);
    for (const CnnNode* n : b.ops()) run(*n);
  }
}

}  // namespace sylva::cnn
