#include "dd_models.h"

#include <string>

#include "strategies_internal.h"

namespace sylva::bench::dd {

void children_first(const InputGraph& g, std::vector<int32_t>& order) {
  const int32_t n = g.num_vertices();
  order.clear();
  std::vector<uint8_t> state(static_cast<size_t>(n), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<int32_t, int32_t>> stack;          // vertex, next child slot
  for (int32_t root : g.roots()) {
    stack.push_back({root, 0});
    state[static_cast<size_t>(root)] = 1;
    while (!stack.empty()) {
      auto& [v, slot] = stack.back();
      auto ch = g.children(v);
      if (slot < static_cast<int32_t>(ch.size())) {
        int32_t c = ch[static_cast<size_t>(slot++)];
        if (c >= 0 && state[static_cast<size_t>(c)] == 0) {
          state[static_cast<size_t>(c)] = 1;
          stack.push_back({c, 0});
        }
        continue;
      }
      state[static_cast<size_t>(v)] = 2;
      order.push_back(v);
      stack.pop_back();
    }
  }
  SYLVA_CHECK(static_cast<int32_t>(order.size()) == n, "[dynamic_decl] ", g.source(),
              ": not every vertex is reachable from a root (cycle?)");
}

ModelDeclarer::ModelDeclarer(const ModelConfig& cfg, ParameterSet& ps, bool dense)
    : cfg_(cfg), ps_(ps), dense_(dense) {
  E_ = &ps["E"];
  Ws_ = &ps["Ws"];
  bs_ = &ps["bs"];
  if (cfg.workload == Workload::var_lstm || cfg.workload == Workload::fixed_lstm) {
    for (int64_t l = 1; l <= cfg.layers; ++l) {
      W_.push_back(&ps["W" + std::to_string(l)]);
      U_.push_back(&ps["U" + std::to_string(l)]);
      b_.push_back(&ps["b" + std::to_string(l)]);
    }
  } else {
    W_.push_back(&ps["W"]);
    b_.push_back(&ps["b"]);
    U_.push_back(cfg.workload == Workload::tree_lstm ? &ps["U"] : nullptr);
    if (cfg.workload == Workload::tree_lstm && cfg.cell == examples::TreeLstmCell::dynet) {
      Ufl_ = &ps["Ufl"];
      Ufr_ = &ps["Ufr"];
      bf_ = &ps["bf"];
    }
  }
}

void ModelDeclarer::declare(Graph& g, const InputGraph& s) {
  children_first(s, order_);
  const size_t n = static_cast<size_t>(s.num_vertices());
  h_.assign(n, -1);
  c_.assign(n, -1);
  switch (cfg_.workload) {
    case Workload::tree_lstm: tree_lstm(g, s); return;
    case Workload::tree_fc: tree_fc(g, s); return;
    case Workload::var_lstm: case Workload::fixed_lstm: lstm(g, s); return;
  }
}

namespace {
// Child `slot`'s expression in `state`, or -1 when the slot is absent.
Expr child(const InputGraph& s, int32_t v, size_t slot, const std::vector<Expr>& state) {
  auto ch = s.children(v);
  return slot < ch.size() && ch[slot] >= 0 ? state[static_cast<size_t>(ch[slot])] : -1;
}
void check_binary(const InputGraph& s, int32_t v) {
  SYLVA_CHECK(s.children(v).size() <= 2, "[dynamic_decl] ", s.source(), " vertex ", v, " has ", s.children(v).size(),
              " children; the tree models read at most 2");
}
}  // namespace

// Tai et al.'s binary Tree-LSTM: g = x·W + [h_l; h_r]·U + b, blocks
// (i, f_l, f_r, o, u); c = σ(i)⊙tanh(u) + σ(f_l)⊙c_l + σ(f_r)⊙c_r;
// h = σ(o)⊙tanh(c); a softmax classifier at every labelled vertex. The
// dynet cell: blocks (i, o, u), and f_l = σ(h_l·Uf_l + b_f), f_r likewise.
void ModelDeclarer::tree_lstm(Graph& g, const InputGraph& s) {
  const int64_t H = cfg_.hidden;
  const bool tai = cfg_.cell == examples::TreeLstmCell::tai;
  const int64_t G = tai ? 5 : 3;
  const auto& words = s.ids("words");
  const auto& labels = s.ids("labels");
  for (int32_t v : order_) {
    check_binary(s, v);
    const Expr hl = child(s, v, 0, h_), cl = child(s, v, 0, c_);
    const Expr hr = child(s, v, 1, h_), cr = child(s, v, 1, c_);
    Expr gates = -1;
    if (dense_ || words[static_cast<size_t>(v)] >= 0)
      gates = g.matmul(g.lookup(*E_, words[static_cast<size_t>(v)]), *W_[0]);
    if (dense_ || hl >= 0 || hr >= 0) {
      const Expr hs[2] = {hl >= 0 ? hl : g.constant(1, H), hr >= 0 ? hr : g.constant(1, H)};
      const Expr u = g.matmul(g.concat(hs), *U_[0]);
      gates = gates >= 0 ? g.add(gates, u) : u;
    }
    if (gates < 0) gates = g.constant(1, G * H);
    gates = g.add_bias(gates, *b_[0]);
    const auto block = [&](int64_t k) { return g.slice(gates, k * H, (k + 1) * H); };
    // The forget gate of child `h` (tai: block k; dynet: σ(h·Uf + b_f)).
    const auto forget = [&](Expr h, int64_t k, Parameter* Uf) {
      if (tai) return g.sigmoid(block(k));
      return g.sigmoid(g.add_bias(g.matmul(h >= 0 ? h : g.constant(1, H), *Uf), *bf_));
    };
    const Expr i = block(0), o = block(tai ? 3 : 1), u = block(tai ? 4 : 2);
    Expr c = g.mul(g.sigmoid(i), g.tanh(u));
    if (cl >= 0 || dense_) c = g.add(c, g.mul(forget(hl, 1, Ufl_), cl >= 0 ? cl : g.constant(1, H)));
    if (cr >= 0 || dense_) c = g.add(c, g.mul(forget(hr, 2, Ufr_), cr >= 0 ? cr : g.constant(1, H)));
    const Expr h = g.mul(g.sigmoid(o), g.tanh(c));
    h_[static_cast<size_t>(v)] = h;
    c_[static_cast<size_t>(v)] = c;
    if (labels[static_cast<size_t>(v)] >= 0)
      g.loss(g.add_bias(g.matmul(h, *Ws_), *bs_), labels[static_cast<size_t>(v)]);
  }
}

// Cavs' Tree-FC: h = relu([h_l; h_r]·W + x + b), x the leaf's word vector.
void ModelDeclarer::tree_fc(Graph& g, const InputGraph& s) {
  const int64_t H = cfg_.hidden;
  const auto& words = s.ids("words");
  const auto& labels = s.ids("labels");
  for (int32_t v : order_) {
    check_binary(s, v);
    const Expr hl = child(s, v, 0, h_), hr = child(s, v, 1, h_);
    Expr pre = -1;
    if (dense_ || hl >= 0 || hr >= 0) {
      const Expr hs[2] = {hl >= 0 ? hl : g.constant(1, H), hr >= 0 ? hr : g.constant(1, H)};
      pre = g.matmul(g.concat(hs), *W_[0]);
    }
    if (dense_ || words[static_cast<size_t>(v)] >= 0) {
      const Expr x = g.lookup(*E_, words[static_cast<size_t>(v)]);
      pre = pre >= 0 ? g.add(pre, x) : x;
    }
    if (pre < 0) pre = g.constant(1, H);
    const Expr h = g.relu(g.add_bias(pre, *b_[0]));
    h_[static_cast<size_t>(v)] = h;
    if (labels[static_cast<size_t>(v)] >= 0)
      g.loss(g.add_bias(g.matmul(h, *Ws_), *bs_), labels[static_cast<size_t>(v)]);
  }
}

std::pair<Expr, Expr> lstm_step(Graph& g, Expr x, Expr h_prev, Expr c_prev, Parameter& W, Parameter& U, Parameter& b,
                                int64_t H) {
  Expr gates = g.add_bias(g.matmul(x, W), b);
  if (h_prev >= 0) gates = g.add(gates, g.matmul(h_prev, U));
  const Expr i = g.slice(gates, 0, H), f = g.slice(gates, H, 2 * H);
  const Expr o = g.slice(gates, 2 * H, 3 * H), u = g.slice(gates, 3 * H, 4 * H);
  Expr c = g.mul(g.sigmoid(i), g.tanh(u));
  if (c_prev >= 0) c = g.add(g.mul(g.sigmoid(f), c_prev), c);
  return {g.mul(g.sigmoid(o), g.tanh(c)), c};
}

// Zaremba et al.'s stacked LSTM over a chain (vertex v's child is the
// previous token): per layer p = x·W + b, gates = p + h_prev·U, blocks
// (i, f, o, u); c = σ(f)⊙c_prev + σ(i)⊙tanh(u); h = σ(o)⊙tanh(c).
void ModelDeclarer::lstm(Graph& g, const InputGraph& s) {
  const int64_t H = cfg_.hidden;
  const auto& words = s.ids("words");
  const auto& labels = s.ids("labels");
  const size_t n = order_.size();
  x_.resize(n);
  for (int32_t v : order_) {
    SYLVA_CHECK(s.children(v).size() <= 1, "[dynamic_decl] ", s.source(), " vertex ", v,
                " has more than one predecessor; the LSTM reads a chain");
    x_[static_cast<size_t>(v)] = g.lookup(*E_, words[static_cast<size_t>(v)]);
  }
  for (size_t l = 0; l < W_.size(); ++l) {
    for (int32_t v : order_) {
      Expr hp = child(s, v, 0, h_), cp = child(s, v, 0, c_);
      if (dense_ && hp < 0) {
        hp = g.constant(1, H);
        cp = g.constant(1, H);
      }
      const auto [h, c] = lstm_step(g, x_[static_cast<size_t>(v)], hp, cp, *W_[l], *U_[l], *b_[l], H);
      h_[static_cast<size_t>(v)] = h;
      c_[static_cast<size_t>(v)] = c;
    }
    // This layer's outputs are the next layer's inputs; its states restart.
    for (size_t v = 0; v < n; ++v) x_[v] = h_[v];
    if (l + 1 < W_.size()) {
      h_.assign(n, -1);
      c_.assign(n, -1);
    }
  }
  for (int32_t v : order_)
    if (labels[static_cast<size_t>(v)] >= 0)
      g.loss(g.add_bias(g.matmul(x_[static_cast<size_t>(v)], *Ws_), *bs_), labels[static_cast<size_t>(v)]);
}

GraphStrategy::GraphStrategy(ParameterSet& ps, const StrategyOptions& o)
    : ps_(ps),
      backend_(o.executor.backend ? *o.executor.backend : backend_for(o.executor.device)),
      graph_(ps, backend_),
      measure_(o.measure_movement),
      update_(o, "dynamic-decl") {
  backend_.set_threads(o.executor.threads);
  // On a device the parameters stay there and gradients are zeroed there, as
  // in a training loop with the optimiser on the device (Sylva's likewise).
  if (!graph_.param_store().on_host()) graph_.param_store().set_update_side(Side::device);
}

void GraphStrategy::update() {
  SYLVA_CHECK(last_train_, "[bench] ", name(), ": update() after a step without training");
  update_.run(graph_.param_store(), touched_);
}

void GraphStrategy::synchronize() { backend_.synchronize(); }

void GraphStrategy::download_parameters() {
  graph_.param_store().make_current(Side::host);
}

StepStats GraphStrategy::finish_step(double declared, bool autobatch, bool train) {
  StepStats s;
  s.loss = graph_.forward(autobatch, train, measure_);
  double compute = graph_.stats().compute_s;
  if (train) {
    auto t1 = std::chrono::steady_clock::now();
    if (graph_.param_store().update_side() == Side::device)
      graph_.param_store().zero_grads(first_ ? RowSparsity{} : touched_);
    else
      ps_.zero_grad(first_ ? nullptr : &touched_);
    first_ = false;
    graph_.backward();
    touched_ = graph_.touched_rows();
    compute += seconds_since(t1);
  }
  s.build_s = declared + graph_.stats().schedule_s;
  s.compute_s = compute;
  s.movement_s = measure_ ? graph_.stats().movement_s : -1.0;
  s.kernels = graph_.stats().kernels;
  return s;
}

namespace {

class DynamicDeclStrategy final : public GraphStrategy {
 public:
  DynamicDeclStrategy(const ModelConfig& cfg, ParameterSet& ps, bool autobatch, bool dense, const StrategyOptions& o)
      : GraphStrategy(ps, o), model_(cfg, ps, dense), autobatch_(autobatch), dense_(dense) {}

  std::string name() const override {
    return std::string(autobatch_ ? "dynamic-decl-autobatch" : "dynamic-decl") + (dense_ ? "-dense" : "");
  }

  StepStats step(std::span<const InputGraph> batch, bool train) override {
    return run_step(autobatch_, train, [&](Graph& g) {
      for (const InputGraph& sample : batch) model_.declare(g, sample);
    });
  }

 private:
  ModelDeclarer model_;
  bool autobatch_, dense_;
};

}  // namespace
}  // namespace sylva::bench::dd

namespace sylva::bench {
std::unique_ptr<Strategy> make_dynamic_decl_strategy(const ModelConfig& cfg, ParameterSet& ps, bool autobatch,
                                                     bool dense, const StrategyOptions& options) {
  return std::make_unique<dd::DynamicDeclStrategy>(cfg, ps, autobatch, dense, options);
}
}  // namespace sylva::bench
