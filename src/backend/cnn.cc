// The CNN runner: the graph logic of the IOS graphs (which channel slices
// feed which node, sequential nodes, merged convolutions, IOS plans) over
// the primitives of a CnnOps (cnn_ops.h): oneDNN or the reference loops on
// the CPU, cuDNN on the GPU.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "cnn_ops.h"
#include "sylva/core/error.h"

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

struct CnnRunner::State {
  // A node's output, allocated once in the ops' memory.
  struct Slot {
    Buffer data;
    Nchw dims;
    bool set = false;
    float* ptr() { return static_cast<float*>(data.data()); }
  };
  // One channel slice of an earlier output moved into a node's input.
  struct Piece {
    const std::string* name;  // the source's (a key of `values`)
    Slot* src;
    int64_t src_c0, dst_c0, channels;
    bool add;  // a later value of the same term: summed into the first
  };
  // How a node's input is assembled: its terms concatenated along
  // channels, each term the sum of its values. `whole` when it is exactly
  // one earlier output (then read in place).
  struct Input {
    Nchw dims;
    std::vector<Piece> pieces;
    Slot* whole = nullptr;
    Buffer scratch;  // gathered here when a conv, pool or element node's input is not whole
  };
  // A merged convolution: its weights (host, and in the ops' memory), its
  // output and its input.
  struct Merged {
    ios::MergedConv m;
    std::vector<float> w, b;
    Buffer dw, db;
    Slot y;
    Input in;
  };

  std::unique_ptr<CnnOps> ops;
  std::map<std::string, Slot> values;                 // every node's, created up front
  std::map<std::string, const CnnNode*> nodes;        // by name, sequential nodes' members included
  std::map<std::string, Input> inputs;                // of every node that reads any
  std::map<std::string, std::vector<float>> weights, bias;  // host copies (merging builds on them)
  std::map<std::string, Buffer> dev_weights, dev_bias;       // copies in the ops' memory, if not host-visible
  std::mutex merged_mutex;
  std::map<std::string, std::unique_ptr<Merged>> merged;  // by merged name

  Slot& slot(const std::string& name) {
    auto it = values.find(name);
    SYLVA_CHECK(it != values.end(), "[cnn] no node '", name, "'");
    return it->second;
  }
  Buffer buffer(int64_t count) {
    Buffer b(ops->memory());
    b.reserve(static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float));
    return b;
  }
  // Weights in the ops' memory: the host vector itself on the CPU.
  const float* device(const std::vector<float>& host, Buffer& copy) {
    if (ops->memory().host_visible()) return host.data();
    if (!copy.data()) {
      copy = buffer(static_cast<int64_t>(host.size()));
      ops->upload(static_cast<float*>(copy.data()), host.data(), static_cast<int64_t>(host.size()));
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
    return in;
  }

  // The node's input, gathered into `dst` (or read in place when whole and
  // dst is null).
  const float* gather(const CnnNode& n, const Input& in, float* dst) {
    for (const Piece& p : in.pieces)
      SYLVA_CHECK(p.src->set, "[cnn] node '", *p.name, "' has no value (node '", n.name, "' reads it; not run yet?)");
    if (!dst) return in.whole->ptr();
    for (const Piece& p : in.pieces)
      ops->move_channels(p.src->ptr(), p.src->dims.c, p.src_c0, dst, in.dims.c, p.dst_c0, p.channels, in.dims.n,
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
  SYLVA_CHECK(impl != Impl::custom, "[cnn] Impl::custom needs the constructor that takes the operators");
  s_->ops = impl == Impl::cudnn ? make_cudnn_cnn_ops() : make_cpu_cnn_ops(impl == Impl::reference);
  init(seed);
}

CnnRunner::CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, std::unique_ptr<CnnOps> ops)
    : g_(g), batch_(batch), impl_(Impl::custom), s_(std::make_unique<State>()) {
  SYLVA_CHECK(batch >= 1, "[cnn] batch must be >= 1, got ", batch);
  SYLVA_CHECK(ops != nullptr, "[cnn] no operators given (null unique_ptr)");
  s_->ops = std::move(ops);
  init(seed);
}

void CnnRunner::init(uint64_t seed) {
  State& s = *s_;
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
    State::Slot& slot = s.values[n.name];
    slot.data = s.buffer(dims.size());
    slot.dims = dims;
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
  State::Slot& input = s.values.at(g.input.name);
  s.ops->upload(input.ptr(), x.data(), static_cast<int64_t>(x.size()));
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
  s_->ops->download(out.data(), static_cast<const float*>(it->second.data.data()), it->second.dims.size());
  return out;
}

void CnnRunner::synchronize() { s_->ops->synchronize(); }

void CnnRunner::run(const CnnNode& n) {
  State& s = *s_;
  State::Slot& y = s.slot(n.name);
  CnnOps& ops = *s.ops;
  if (n.type == "placeholder") {
    SYLVA_CHECK(y.set, "[cnn] placeholder '", n.name, "' has no value (run the block before it first)");
    return;
  }
  if (n.type == "sequential") {
    for (const CnnNode& m : n.nodes) run(m);
    SYLVA_CHECK(!n.nodes.empty(), "[cnn] sequential node '", n.name, "' has no members");
    State::Slot& last = s.slot(n.nodes.back().name);
    SYLVA_CHECK(last.dims.size() == y.dims.size(), "[cnn] sequential node '", n.name, "' declares another shape than ",
                "its last member '", n.nodes.back().name, "'");
    ops.move_channels(last.ptr(), last.dims.c, 0, y.ptr(), y.dims.c, 0, y.dims.c, y.dims.n, y.dims.h * y.dims.w,
                      false);
    y.set = true;
    return;
  }
  State::Input& in = s.inputs.at(n.name);
  if (n.type == "conv") {
    ops.conv(n, s.conv_input(n, in), in.dims, s.device(s.weights.at(n.name), s.dev_weights.at(n.name)),
             s.device(s.bias.at(n.name), s.dev_bias.at(n.name)), y.ptr());
  } else if (n.type == "pool") {
    ops.pool(n, s.conv_input(n, in), in.dims, y.ptr());
  } else if (n.type == "element") {
    const auto terms = static_cast<int64_t>(n.inputs.size());
    ops.element(s.gather(n, in, static_cast<float*>(in.scratch.data())), y.ptr(), in.dims.n, terms,
                in.dims.size() / in.dims.n / terms, n.op == "mul");
  } else {  // identity, relu, activation: the gathered input, activated in place
    s.gather(n, in, y.ptr());
    if (n.type != "identity") ops.activate(y.ptr(), y.dims.size(), act_of(n.type == "relu" ? "relu" : n.op));
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
  s.ops->conv(c, s.conv_input(c, mg->in), mg->in.dims, s.device(mg->w, mg->dw), s.device(mg->b, mg->db),
              mg->y.ptr());
  // Each member's channels, [offset, offset + K) of the merged output.
  const Nchw& m = mg->y.dims;
  for (size_t j = 0; j < convs.size(); ++j) {
    State::Slot& y = s.slot(convs[j]->name);
    s.ops->move_channels(mg->y.ptr(), m.c, mg->m.offsets[j], y.ptr(), y.dims.c, 0, y.dims.c, m.n, m.h * m.w, false);
    y.set = true;
  }
}

void CnnRunner::run_all() {
  for (const ios::CnnBlock& b : g_.blocks) {
    if (!s_->values.at(b.enter.name).set) run(b.enter);
    for (const CnnNode* n : b.ops()) run(*n);
  }
}

namespace {

// Runs the operators of group `g` (in topological order).
void run_group(CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part, ios::OpSet g) {
  for (int v : part.dag.topo_order())
    if (g >> v & 1) r.run(*ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
}

// The same with `threads` OpenMP threads for each operator (the CPU).
void run_group_on(int threads, CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part,
                  ios::OpSet g) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  run_group(r, ops, part, g);
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

}  // namespace

void CnnRunner::run_stage(const std::vector<const CnnNode*>& ops, const ios::BlockPart& part, const ios::Stage& st,
                          int cores) {
  CnnOps& dev = *s_->ops;
  if (st.kind == ios::Stage::Kind::merged) {
    std::vector<const CnnNode*> convs;
    for (int v : part.dag.topo_order())
      if (st.groups[0] >> v & 1) convs.push_back(ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
    const int before = omp_get_max_threads();
    omp_set_num_threads(cores);
    run_merged(convs);
    omp_set_num_threads(before);
    return;
  }
  if (st.groups.size() == 1) {
    run_group_on(cores, *this, ops, part, st.groups[0]);
    return;
  }
  const int groups = static_cast<int>(st.groups.size());
  if (dev.lanes() > 0) {  // a stream per group
    dev.fork(groups);
    try {
      for (int k = 0; k < groups; ++k) {
        dev.lane(k);
        run_group(*this, ops, part, st.groups[static_cast<size_t>(k)]);
      }
    } catch (...) {
      dev.join();
      throw;
    }
    dev.join();
    return;
  }
  const int each = std::max(1, cores / groups);
  std::vector<std::function<void()>> jobs;
  for (ios::OpSet g : st.groups) jobs.push_back([&, g] { run_group_on(each, *this, ops, part, g); });
  group_pool().run(jobs);
}

void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores) {
  SYLVA_CHECK(cores >= 1, "[cnn] cores must be >= 1, got ", cores);
  const std::vector<const CnnNode*> ops = block.ops();
  for (const ios::Stage& st : plan.stages) runner.run_stage(ops, part, st, cores);
}

double ProfilingCost::latency(const ios::OpDag&, const ios::Stage& stage) {
  if (auto it = cache_.find(stage.groups); it != cache_.end()) return it->second;
  SYLVA_CHECK(repeats_ >= 1, "[cnn] profiling needs at least one repeat, got ", repeats_);
  const std::vector<const CnnNode*> ops = block_.ops();
  std::vector<double> t;
  runner_.synchronize();
  for (int k = 0; k <= repeats_; ++k) {
    const auto start = std::chrono::steady_clock::now();
    runner_.run_stage(ops, part_, stage, cores_);
    runner_.synchronize();
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
