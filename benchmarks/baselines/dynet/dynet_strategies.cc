#include "dynet_strategies.h"

#include <dynet/devices.h>
#include <dynet/dynet.h>
#include <dynet/globals.h>
#include <dynet/expr.h>
#include <dynet/init.h>
#include <dynet/param-init.h>
#include <dynet/lstm.h>
#include <dynet/training.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "dd_models.h"  // children_first
#include "strategies_internal.h"  // seconds_since

namespace sylva::bench {
namespace {

namespace dy = dynet;

// ---- copies between Sylva's and DyNet's layouts ----
//
// A block of Sylva matrix `s` ([in, out] row-major): columns [first, first +
// n) (all rows), which is a DyNet {n, in} column-major matrix. Vectors are
// [1, out]: the block is n consecutive elements.
struct Block {
  const Parameter* sylva;
  int64_t first = 0, n = 0;  // n = 0: every column
};

int64_t out_cols(const Parameter& p) { return p.value.shape().rank() == 1 ? p.value.numel() : p.value.shape().cols(); }
int64_t in_rows(const Parameter& p) { return p.value.shape().rank() == 1 ? 1 : p.value.shape().rows(); }

// Elementwise copy of block `b` between Sylva's storage `s` and DyNet's `d`:
// d[r + c·n] ↔ s[c·out + first + r].
template <bool to_dynet>
void copy_block(const Block& b, float* s, float* d) {
  const int64_t out = out_cols(*b.sylva), in = in_rows(*b.sylva), n = b.n ? b.n : out;
  for (int64_t c = 0; c < in; ++c)
    for (int64_t r = 0; r < n; ++r) {
      float& sv = s[c * out + b.first + r];
      float& dv = d[r + c * n];
      if constexpr (to_dynet) dv = sv; else sv = dv;
    }
}

float* sylva_floats(Tensor& t) { return static_cast<float*>(t.raw()); }

// A DyNet parameter made from (a block of) a Sylva one.
dy::Parameter add_param(dy::ParameterCollection& m, const Block& b) {
  const int64_t n = b.n ? b.n : out_cols(*b.sylva), in = in_rows(*b.sylva);
  dy::Dim dim = in == 1 && b.sylva->value.shape().rank() == 1
                    ? dy::Dim({static_cast<unsigned>(n)})
                    : dy::Dim({static_cast<unsigned>(n), static_cast<unsigned>(in)});
  dy::Parameter p = m.add_parameters(dim, dy::ParameterInitConst(0.f), b.sylva->name + std::to_string(b.first));
  copy_block<true>(b, const_cast<float*>(static_cast<const float*>(b.sylva->value.raw())),
                   p.get_storage().values.v);
  return p;
}

// Which Sylva block each DyNet parameter came from, for copying gradients back.
struct Link {
  dy::Parameter param;
  Block block;
};

// A parameter of the model code: its expression in the current graph is
// made once per graph (as DyNet users do: each parameter(cg, p) is a node
// that copies the value forward and accumulates its gradient backward).
using ParamId = int;

class DynetStrategyImpl final : public DynetStrategy {
 public:
  DynetStrategyImpl(std::string name, const ModelConfig& cfg, ParameterSet& ps, bool autobatch,
                    const StrategyOptions& o)
      : name_(std::move(name)), cfg_(cfg), autobatch_(autobatch) {
    const Parameter& E = ps["E"];
    E_ = model_.add_lookup_parameters(static_cast<unsigned>(E.value.shape().rows()),
                                      {static_cast<unsigned>(E.value.shape().cols())}, dy::ParameterInitConst(0.f),
                                      "E");
    std::memcpy(E_.get_storage().all_values.v, E.value.raw(), E.value.nbytes());
    E_name_ = E.name;
    Ws_ = link(ps, "Ws");
    bs_ = link(ps, "bs");
    switch (cfg.workload) {
      case Workload::tree_lstm: make_tree_lstm(ps); break;
      case Workload::tree_fc:
        W_ = link(ps, "W");
        b_ = link(ps, "b");
        break;
      case Workload::var_lstm: case Workload::fixed_lstm: make_lstm(ps); break;
    }
    make_trainer(o);
  }

  std::string name() const override { return name_; }

  StepStats step(std::span<const InputGraph> batch, bool train) override {
    StepStats s;
    auto t0 = std::chrono::steady_clock::now();
    dy::autobatch_flag = autobatch_ ? 1 : 0;
    dy::ComputationGraph cg;
    if (lstm_) lstm_->new_graph(cg);
    exprs_.clear();
    for (dy::Parameter& p : graph_params_) exprs_.push_back(dy::parameter(cg, p));
    losses_.clear();
    for (const InputGraph& g : batch) declare(cg, g);
    SYLVA_CHECK(!losses_.empty(), "[dynet] a minibatch without a labelled vertex has no loss");
    dy::Expression loss = dy::sum(losses_);
    s.build_s = seconds_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    s.loss = dy::as_scalar(cg.forward(loss));
    if (train) {
      // Trainer::update zeroes the gradients it used; without one, do it here.
      if (!trainer_ || !updated_) model_.reset_gradient();
      updated_ = false;
      cg.backward(loss);
    }
    s.compute_s = seconds_since(t1);
    // The forward, backward and scratch pools, while this graph holds them.
    size_t used = 0;
    for (int pool : {0, 1, 3}) used += dy::default_device->pools[static_cast<size_t>(pool)]->used();
    values_bytes_ = std::max(values_bytes_, used);
    s.movement_s = -1;
    s.kernels = -1;
    return s;
  }

  double values_mb() const override { return static_cast<double>(values_bytes_) / (1 << 20); }

  // The forward, backward, parameter and scratch pools: --dynet-mem split in
  // four, and what the parameter pool grew to (Adam's moments, the gradients).
  double pools_mb() const override {
    size_t cap = 0;
    for (dy::AlignedMemoryPool* pool : dy::default_device->pools) cap += pool->get_cap();
    return static_cast<double>(cap) / (1 << 20);
  }

  void update() override {
    SYLVA_CHECK(trainer_, "[dynet] strategy ", name_, " was made without an optimizer");
    trainer_->update();
    updated_ = true;
  }

  void copy_gradients(ParameterSet& ps) const override {
    Parameter& E = ps[E_name_];
    const auto& st = E_.get_storage();
    E.grad.fill_zero();
    if (st.all_updated || !st.non_zero_grads.empty())
      std::memcpy(E.grad.raw(), st.all_grads.v, E.grad.nbytes());
    for (Link l : links_) {
      Parameter& p = ps[l.block.sylva->name];
      l.block.sylva = &p;
      copy_block<false>(l.block, sylva_floats(p.grad), l.param.get_storage().g.v);
    }
  }

 private:
  ParamId link(ParameterSet& ps, const std::string& name, int64_t first = 0, int64_t n = 0) {
    Block b{&ps[name], first, n};
    // The links of one Sylva parameter cover all of it, so copy_gradients
    // writes every element of its gradient.
    dy::Parameter p = add_param(model_, b);
    links_.push_back({p, b});
    graph_params_.push_back(p);
    return static_cast<ParamId>(graph_params_.size() - 1);
  }
  // Parameter k's expression in the current graph.
  const dy::Expression& P(ParamId k) const { return exprs_[static_cast<size_t>(k)]; }

  void make_tree_lstm(ParameterSet& ps) {
    const int64_t H = cfg_.hidden;
    if (cfg_.cell == examples::TreeLstmCell::tai) {
      W_ = link(ps, "W");
      U_ = link(ps, "U");
      b_ = link(ps, "b");
      return;
    }
    // The DyNet benchmarks' treenn cell: one matrix per gate, as there.
    for (int64_t g = 0; g < 3; ++g) {
      Wg_[g] = link(ps, "W", g * H, H);
      Ug_[g] = link(ps, "U", g * H, H);
      bg_[g] = link(ps, "b", g * H, H);
    }
    UF1_ = link(ps, "Ufl");
    UF2_ = link(ps, "Ufr");
    bf_ = link(ps, "bf");
  }

  void make_lstm(ParameterSet& ps) {
    lstm_.emplace(static_cast<unsigned>(cfg_.layers), static_cast<unsigned>(cfg_.embed),
                  static_cast<unsigned>(cfg_.hidden), model_, /*ln_lstm=*/false, /*forget_bias=*/0.f);
    for (int64_t l = 1; l <= cfg_.layers; ++l) {
      auto& p = lstm_->params[static_cast<size_t>(l - 1)];
      const std::string k = std::to_string(l);
      for (auto [dp, name] : {std::pair{p[0], "W" + k}, std::pair{p[1], "U" + k}, std::pair{p[2], "b" + k}}) {
        Block b{&ps[name], 0, 0};
        copy_block<true>(b, sylva_floats(ps[name].value), dp.get_storage().values.v);
        links_.push_back({dp, b});
      }
    }
  }

  void make_trainer(const StrategyOptions& o) {
    if (o.optimizer == "none") return;
    const float lr = static_cast<float>(o.lr);
    if (o.optimizer == "adam") {
      trainer_ = std::make_unique<dy::AdamTrainer>(model_, lr);
      trainer_->sparse_updates_enabled = false;  // dense, as Sylva's Adam
    } else if (o.optimizer == "adagrad") {
      trainer_ = std::make_unique<dy::AdagradTrainer>(model_, lr, 1e-10f);
    } else if (o.optimizer == "sgd") {
      trainer_ = std::make_unique<dy::SimpleSGDTrainer>(model_, lr);
    } else {
      SYLVA_THROW("[dynet] unknown optimizer '", o.optimizer, "' (none, sgd, adagrad or adam)");
    }
    trainer_->clipping_enabled = false;
  }

  void declare(dy::ComputationGraph& cg, const InputGraph& s) {
    dd::children_first(s, order_);
    const size_t n = static_cast<size_t>(s.num_vertices());
    h_.assign(n, {});
    c_.assign(n, {});
    switch (cfg_.workload) {
      case Workload::tree_lstm: tree_lstm(cg, s); return;
      case Workload::tree_fc: tree_fc(cg, s); return;
      case Workload::var_lstm: case Workload::fixed_lstm: lstm(cg, s); return;
    }
  }

  // Child `slot` of v, or -1.
  static int32_t child(const InputGraph& s, int32_t v, size_t slot) {
    auto ch = s.children(v);
    SYLVA_CHECK(ch.size() <= 2, "[dynet] ", s.source(), " vertex ", v, " has ", ch.size(),
                " children; the tree models read at most 2");
    return slot < ch.size() ? ch[slot] : -1;
  }
  dy::Expression state(dy::ComputationGraph& cg, const std::vector<dy::Expression>& v, int32_t k) const {
    return k >= 0 ? v[static_cast<size_t>(k)] : dy::zeros(cg, {static_cast<unsigned>(cfg_.hidden)});
  }
  void classify(const dy::Expression& h, int32_t label) {
    if (label < 0) return;
    losses_.push_back(dy::pickneglogsoftmax(dy::affine_transform({P(bs_), P(Ws_), h}), static_cast<unsigned>(label)));
  }

  void tree_lstm(dy::ComputationGraph& cg, const InputGraph& s) {
    const auto& words = s.ids("words");
    const auto& labels = s.ids("labels");
    const auto H = static_cast<unsigned>(cfg_.hidden);
    const bool tai = cfg_.cell == examples::TreeLstmCell::tai;
    for (int32_t v : order_) {
      const int32_t l = child(s, v, 0), r = child(s, v, 1);
      const int32_t word = words[static_cast<size_t>(v)];
      const bool kids = l >= 0 || r >= 0;
      dy::Expression x, e;
      if (word >= 0) x = dy::lookup(cg, E_, static_cast<unsigned>(word));
      if (kids) e = dy::concatenate({state(cg, h_, l), state(cg, h_, r)});
      // gate k: b_k + W_k·x (with a word) + U_k·e (with children)
      const auto gate = [&](ParamId b, ParamId W, ParamId U) {
        std::vector<dy::Expression> args{P(b)};
        if (word >= 0) args.insert(args.end(), {P(W), x});
        if (kids) args.insert(args.end(), {P(U), e});
        return dy::affine_transform(args);
      };
      dy::Expression i, o, u, c;
      if (tai) {
        const dy::Expression g = gate(b_, W_, U_);
        i = dy::logistic(dy::pick_range(g, 0, H));
        o = dy::logistic(dy::pick_range(g, 3 * H, 4 * H));
        u = dy::tanh(dy::pick_range(g, 4 * H, 5 * H));
        c = dy::cmult(i, u);
        if (l >= 0) c = c + dy::cmult(dy::logistic(dy::pick_range(g, H, 2 * H)), c_[static_cast<size_t>(l)]);
        if (r >= 0) c = c + dy::cmult(dy::logistic(dy::pick_range(g, 2 * H, 3 * H)), c_[static_cast<size_t>(r)]);
      } else {
        i = dy::logistic(gate(bg_[0], Wg_[0], Ug_[0]));
        o = dy::logistic(gate(bg_[1], Wg_[1], Ug_[1]));
        u = dy::tanh(gate(bg_[2], Wg_[2], Ug_[2]));
        c = dy::cmult(i, u);
        if (l >= 0)
          c = c + dy::cmult(dy::logistic(dy::affine_transform({P(bf_), P(UF1_), h_[static_cast<size_t>(l)]})),
                            c_[static_cast<size_t>(l)]);
        if (r >= 0)
          c = c + dy::cmult(dy::logistic(dy::affine_transform({P(bf_), P(UF2_), h_[static_cast<size_t>(r)]})),
                            c_[static_cast<size_t>(r)]);
      }
      const dy::Expression h = dy::cmult(o, dy::tanh(c));
      h_[static_cast<size_t>(v)] = h;
      c_[static_cast<size_t>(v)] = c;
      classify(h, labels[static_cast<size_t>(v)]);
    }
  }

  void tree_fc(dy::ComputationGraph& cg, const InputGraph& s) {
    const auto& words = s.ids("words");
    const auto& labels = s.ids("labels");
    for (int32_t v : order_) {
      const int32_t l = child(s, v, 0), r = child(s, v, 1);
      const int32_t word = words[static_cast<size_t>(v)];
      dy::Expression pre;
      if (l >= 0 || r >= 0)
        pre = dy::affine_transform({P(b_), P(W_), dy::concatenate({state(cg, h_, l), state(cg, h_, r)})});
      if (word >= 0) {
        const dy::Expression x = dy::lookup(cg, E_, static_cast<unsigned>(word));
        pre = pre.pg != nullptr ? pre + x : x + P(b_);
      }
      if (pre.pg == nullptr) pre = P(b_);
      const dy::Expression h = dy::rectify(pre);
      h_[static_cast<size_t>(v)] = h;
      classify(h, labels[static_cast<size_t>(v)]);
    }
  }

  void lstm(dy::ComputationGraph& cg, const InputGraph& s) {
    const auto& words = s.ids("words");
    const auto& labels = s.ids("labels");
    lstm_->start_new_sequence();
    for (int32_t v : order_) {
      SYLVA_CHECK(s.children(v).size() <= 1, "[dynet] ", s.source(), " vertex ", v,
                  " has more than one predecessor; the LSTM reads a chain");
      const int32_t word = words[static_cast<size_t>(v)];
      const dy::Expression x = word >= 0 ? dy::lookup(cg, E_, static_cast<unsigned>(word))
                                         : dy::zeros(cg, {static_cast<unsigned>(cfg_.embed)});
      classify(lstm_->add_input(x), labels[static_cast<size_t>(v)]);
    }
  }

  std::string name_;
  ModelConfig cfg_;
  bool autobatch_;
  dy::ParameterCollection model_;
  dy::LookupParameter E_;
  std::string E_name_;
  ParamId Ws_ = -1, bs_ = -1, W_ = -1, U_ = -1, b_ = -1;  // tai cell, tree-fc
  ParamId Wg_[3] = {-1, -1, -1}, Ug_[3] = {-1, -1, -1}, bg_[3] = {-1, -1, -1};  // dynet cell: i, o, u
  ParamId UF1_ = -1, UF2_ = -1, bf_ = -1;
  std::vector<dy::Parameter> graph_params_;  // those the model code reads (ParamId: index)
  std::vector<dy::Expression> exprs_;       // their expressions in the current graph
  std::optional<dy::VanillaLSTMBuilder> lstm_;
  std::vector<Link> links_;
  std::unique_ptr<dy::Trainer> trainer_;
  bool updated_ = false;
  size_t values_bytes_ = 0;  // the most the forward, backward and scratch pools held after a step
  // Per-sample work arrays.
  std::vector<int32_t> order_;
  std::vector<dy::Expression> h_, c_, losses_;
};

struct DynetInit {
  int mem_mb = 0;
  uint64_t seed = 0;
};
std::optional<DynetInit>& dynet_init_state() {
  static std::optional<DynetInit> s;
  return s;
}

}  // namespace

std::vector<std::string> dynet_strategy_names(Workload) { return {"dynet", "dynet-autobatch"}; }

void init_dynet(int mem_mb, uint64_t seed) {
  auto& st = dynet_init_state();
  if (st) {
    SYLVA_CHECK(st->mem_mb == mem_mb && st->seed == seed, "[dynet] already initialised with ", st->mem_mb,
                " MB and seed ", st->seed, "; DyNet initialises once per process");
    return;
  }
  SYLVA_CHECK(mem_mb > 0, "[dynet] memory must be > 0 MB, got ", mem_mb);
  dy::DynetParams p;
  p.mem_descriptor = std::to_string(mem_mb);
  p.random_seed = static_cast<unsigned>(seed == 0 ? 1 : seed);
  p.autobatch = 0;  // set per graph by each strategy
  dy::initialize(p);
  st = DynetInit{mem_mb, seed};
}

std::unique_ptr<DynetStrategy> make_dynet_strategy(const std::string& name, const ModelConfig& cfg, ParameterSet& ps,
                                                   const StrategyOptions& o) {
  SYLVA_CHECK(name == "dynet" || name == "dynet-autobatch", "[dynet] unknown strategy '", name,
              "' (dynet or dynet-autobatch)");
  SYLVA_CHECK(o.executor.device.kind == DeviceKind::cpu, "[dynet] the DyNet strategies run on the CPU only (DyNet is "
              "built without CUDA here), not on ", o.executor.device.str());
  SYLVA_CHECK(o.executor.threads == 1, "[dynet] DyNet's CPU build runs on one thread; got --threads ",
              o.executor.threads);
  // Every copy in and out reads the parameters as float.
  SYLVA_CHECK(cfg.dtype == DType::f32 && ps.dtype() == DType::f32,
              "[dynet] DyNet computes in float: f32 only, not ", dtype_name(ps.dtype()));
  SYLVA_CHECK(!cfg.projection_in_cell && !cfg.per_gate,
              "[dynet] projection_in_cell and per_gate are variants of Sylva's model only");
  if (!dynet_init_state()) init_dynet(1024, 1);
  return std::make_unique<DynetStrategyImpl>(name, cfg, ps, name == "dynet-autobatch", o);
}

}  // namespace sylva::bench
