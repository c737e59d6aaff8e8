#include "torch_strategies.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <utility>

namespace sylva::bench {
namespace {

namespace F = torch::nn::functional;

class Timer {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

torch::Dtype torch_dtype(DType d) {
  switch (d) {
    case DType::f32: return torch::kFloat;
    case DType::f64: return torch::kDouble;
    default: break;
  }
  SYLVA_THROW("[libtorch] parameters must be f32 or f64, got ", dtype_name(d));
}

torch::Tensor to_torch(const Tensor& t, torch::Dtype dt) {
  return torch::from_blob(const_cast<void*>(t.raw()), t.shape().dims(), dt).clone();
}

// Copies `g` (undefined = zero) into `dst`, which has g's shape.
void to_sylva(const torch::Tensor& g, Tensor& dst) {
  dst.fill_zero();
  if (!g.defined()) return;
  const torch::Tensor c = g.contiguous();
  SYLVA_ASSERT(c.numel() == dst.numel(), "gradient of ", c.numel(), " elements for ", dst.numel());
  std::memcpy(dst.raw(), c.data_ptr(), dst.nbytes());
}

torch::Tensor ids_tensor(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, torch::kLong).clone();
}

// Sylva's LSTM gate blocks are (i, f, o, u), torch's (i, f, g, o): swapping
// the last two maps either order to the other.
torch::Tensor swap_gate_blocks(const torch::Tensor& t, int64_t h) {
  return torch::cat({t.narrow(0, 0, 2 * h), t.narrow(0, 3 * h, h), t.narrow(0, 2 * h, h)}, 0);
}

void set_threads(int threads) {
  if (threads <= 0) return;
  torch::set_num_threads(threads);
  // Allowed once per process, before any inter-op work; later calls throw.
  static bool interop_set = false;
  if (!interop_set) {
    interop_set = true;
    try {
      at::set_num_interop_threads(threads);
    } catch (const c10::Error&) {
    }
  }
}

// Shared by every torch strategy: the parameters as torch leaves, the
// timing and the copy of gradients back into the ParameterSet.
class TorchStrategy : public Strategy {
 public:
  TorchStrategy(std::string name, const ModelConfig& cfg, ParameterSet& ps)
      : name_(std::move(name)), cfg_(cfg), ps_(ps), dtype_(torch_dtype(ps.dtype())) {}
  std::string name() const override { return name_; }

  StepStats step(std::span<const InputGraph> batch, bool train) final {
    StepStats st;
    st.movement_s = -1;
    st.kernels = -1;
    Timer build;
    prepare(batch);
    st.build_s = build.seconds();
    Timer compute;
    if (train) {
      torch::Tensor loss = forward();
      loss.backward();
      st.compute_s = compute.seconds();
      st.loss = loss.item<double>();
      copy_grads();
      for (auto& [name, t] : params_) t.mutable_grad() = torch::Tensor();
    } else {
      torch::NoGradGuard no_grad;
      torch::Tensor loss = forward();
      st.compute_s = compute.seconds();
      st.loss = loss.item<double>();
    }
    return st;
  }

 protected:
  // Builds the index tensors of a minibatch (timed as build_s).
  virtual void prepare(std::span<const InputGraph> batch) = 0;
  // The summed loss of the prepared minibatch (timed as compute_s, with backward).
  virtual torch::Tensor forward() = 0;
  // Default: every registered parameter has Sylva's layout.
  virtual void copy_grads() {
    for (auto& [name, t] : params_) to_sylva(t.grad(), ps_[name].grad);
  }

  torch::Tensor param(const std::string& name) {
    torch::Tensor t = to_torch(ps_[name].value, dtype_).requires_grad_(true);
    params_.emplace_back(name, t);
    return t;
  }

  std::string name_;
  ModelConfig cfg_;
  ParameterSet& ps_;
  torch::Dtype dtype_;
  std::vector<std::pair<std::string, torch::Tensor>> params_;
};

// ---- trees ------------------------------------------------------------------

enum class TreeCell : uint8_t { lstm, fc };

// Slot `s` of v's children, -1 when absent.
int32_t child(const InputGraph& g, int32_t v, size_t s) {
  std::span<const int32_t> c = g.children(v);
  return s < c.size() ? c[s] : -1;
}

void check_binary(const InputGraph& g, const std::string& who) {
  for (int32_t v = 0; v < g.num_vertices(); ++v)
    SYLVA_CHECK(g.children(v).size() <= 2, "[", who, "] vertex ", v, " of sample '", g.source(), "' has ",
                g.children(v).size(), " child slots; the tree models take at most 2");
}

// The tree models' parameters and the labelled rows of a minibatch, shared
// by the recursive and the level-wise strategy.
class TreeStrategy : public TorchStrategy {
 public:
  TreeStrategy(std::string name, const ModelConfig& cfg, ParameterSet& ps)
      : TorchStrategy(std::move(name), cfg, ps),
        cell_(cfg.workload == Workload::tree_lstm ? TreeCell::lstm : TreeCell::fc),
        h_(cfg.hidden),
        E_(param("E")),
        W_(param("W")),
        U_(cell_ == TreeCell::lstm ? param("U") : torch::Tensor()),
        b_(param("b")),
        Ws_(param("Ws")),
        bs_(param("bs")) {}

 protected:
  // Width of the state a vertex passes to its parent: [h; c] or h.
  int64_t state_width() const { return cell_ == TreeCell::lstm ? 2 * h_ : h_; }

  // One batched cell over n vertices. x_term: x·W (LSTM) or x (FC) of each
  // row, child_h: [h_l; h_r] rows, cl and cr: the children's c rows (LSTM);
  // any may be undefined, meaning zero. Returns the rows' states.
  torch::Tensor cell(int64_t n, const torch::Tensor& x_term, const torch::Tensor& child_h, const torch::Tensor& cl,
                     const torch::Tensor& cr) const {
    torch::Tensor pre = x_term.defined() ? x_term + b_ : b_.unsqueeze(0).expand({n, -1});
    if (child_h.defined()) pre = torch::addmm(pre, child_h, cell_ == TreeCell::lstm ? U_ : W_);
    if (cell_ == TreeCell::fc) return torch::relu(pre);
    std::vector<torch::Tensor> g = pre.chunk(5, 1);  // i, f_l, f_r, o, u
    torch::Tensor c = torch::sigmoid(g[0]) * torch::tanh(g[4]);
    if (cl.defined()) c = c + torch::sigmoid(g[1]) * cl;
    if (cr.defined()) c = c + torch::sigmoid(g[2]) * cr;
    return torch::cat({torch::sigmoid(g[3]) * torch::tanh(c), c}, 1);
  }

  torch::Tensor loss_of(const torch::Tensor& labelled_h) const {
    return F::cross_entropy(torch::addmm(bs_, labelled_h, Ws_), labels_,
                            F::CrossEntropyFuncOptions().reduction(torch::kSum));
  }

  TreeCell cell_;
  int64_t h_;
  torch::Tensor E_, W_, U_, b_, Ws_, bs_;
  torch::Tensor labels_;  // of the labelled vertices, in the order the strategy collects them
};

// Per sample, a recursion from the roots with [1, ·] rows per vertex. The
// word vectors of the minibatch come from one embedding lookup, handed out
// as rows by unbind: a lookup per vertex or per sample would give E a dense
// [vocab, d] gradient each time.
class RecursiveTrees final : public TreeStrategy {
 public:
  using TreeStrategy::TreeStrategy;

 private:
  void prepare(std::span<const InputGraph> batch) override {
    batch_ = batch;
    std::vector<int64_t> words, labels;
    word_row_.clear();
    for (const InputGraph& g : batch) {
      check_binary(g, name_);
      for (int32_t w : g.ids("words")) {
        word_row_.push_back(w >= 0 ? static_cast<int64_t>(words.size()) : -1);
        if (w >= 0) words.push_back(w);
      }
      // Labels in the order the recursion below visits the vertices (post-order from each root).
      const std::vector<int32_t>& y = g.ids("labels");
      std::vector<char> seen(static_cast<size_t>(g.num_vertices()), 0);
      auto visit = [&](auto& self, int32_t v) -> void {
        if (seen[static_cast<size_t>(v)]) return;
        seen[static_cast<size_t>(v)] = 1;
        for (int32_t c : g.children(v))
          if (c >= 0) self(self, c);
        if (y[static_cast<size_t>(v)] >= 0) labels.push_back(y[static_cast<size_t>(v)]);
      };
      for (int32_t r : g.roots()) visit(visit, r);
    }
    words_ = ids_tensor(words);
    labels_ = ids_tensor(labels);
    zero_ = torch::zeros({1, h_}, torch::TensorOptions().dtype(dtype_));
  }

  torch::Tensor forward() override {
    std::vector<torch::Tensor> x = E_.index_select(0, words_).unbind(0);
    std::vector<torch::Tensor> labelled;
    int64_t base = 0;  // first vertex of the current sample in word_row_
    for (const InputGraph& g : batch_) {
      std::vector<torch::Tensor> state(static_cast<size_t>(g.num_vertices()));
      const std::vector<int32_t>& y = g.ids("labels");
      auto visit = [&](auto& self, int32_t v) -> const torch::Tensor& {
        torch::Tensor& s = state[static_cast<size_t>(v)];
        if (s.defined()) return s;
        const int32_t l = child(g, v, 0), r = child(g, v, 1);
        torch::Tensor sl = l >= 0 ? self(self, l) : torch::Tensor();
        torch::Tensor sr = r >= 0 ? self(self, r) : torch::Tensor();
        torch::Tensor x_term, hcat, cl, cr;
        if (const int64_t row = word_row_[static_cast<size_t>(base + v)]; row >= 0) {
          x_term = x[static_cast<size_t>(row)].unsqueeze(0);
          if (cell_ == TreeCell::lstm) x_term = x_term.mm(W_);
        }
        if (sl.defined() || sr.defined()) {
          hcat = torch::cat({sl.defined() ? sl.narrow(1, 0, h_) : zero_, sr.defined() ? sr.narrow(1, 0, h_) : zero_},
                            1);
        }
        if (cell_ == TreeCell::lstm) {
          if (sl.defined()) cl = sl.narrow(1, h_, h_);
          if (sr.defined()) cr = sr.narrow(1, h_, h_);
        }
        s = cell(1, x_term, hcat, cl, cr);
        if (y[static_cast<size_t>(v)] >= 0) labelled.push_back(s.narrow(1, 0, h_));
        return s;
      };
      for (int32_t root : g.roots()) visit(visit, root);
      base += g.num_vertices();
    }
    return loss_of(torch::cat(labelled, 0));
  }

  std::span<const InputGraph> batch_;
  std::vector<int64_t> word_row_;  // per vertex of the minibatch: its row of words_, -1 = none
  torch::Tensor words_, zero_;
};

// DGL-style batching: all vertices of the minibatch grouped by height, one
// batched cell per level. States live in one [V + 1, width] tensor (row V
// stays zero for absent children); each level reads its children's rows
// with index_select and writes its own with index_copy_.
class LevelTrees final : public TreeStrategy {
 public:
  using TreeStrategy::TreeStrategy;

 private:
  struct Level {
    torch::Tensor rows, left, right;  // global vertex ids; children V when absent
    torch::Tensor x_rows;             // rows of the word table, n_words = none; undefined if no words
    bool has_children = false;
  };

  void prepare(std::span<const InputGraph> batch) override {
    std::vector<std::vector<int64_t>> rows, left, right, xrow;
    std::vector<int64_t> words, labelled, labels;
    std::vector<int32_t> height;
    std::vector<std::pair<int64_t, int32_t>> word_of;  // (global vertex, word)
    int64_t base = 0;
    for (const InputGraph& g : batch) check_binary(g, name_);
    for (const InputGraph& g : batch) base += g.num_vertices();
    const int64_t total = base;
    std::vector<int32_t> level_of(static_cast<size_t>(total));
    base = 0;
    for (const InputGraph& g : batch) {
      height.assign(static_cast<size_t>(g.num_vertices()), -1);
      auto h_of = [&](auto& self, int32_t v) -> int32_t {
        int32_t& h = height[static_cast<size_t>(v)];
        if (h >= 0) return h;
        int32_t m = -1;
        for (int32_t c : g.children(v))
          if (c >= 0) m = std::max(m, self(self, c));
        return h = m + 1;
      };
      const std::vector<int32_t>& w = g.ids("words");
      const std::vector<int32_t>& y = g.ids("labels");
      for (int32_t v = 0; v < g.num_vertices(); ++v) {
        const auto lv = static_cast<size_t>(h_of(h_of, v));
        if (rows.size() <= lv) rows.resize(lv + 1), left.resize(lv + 1), right.resize(lv + 1), xrow.resize(lv + 1);
        const int32_t l = child(g, v, 0), r = child(g, v, 1);
        rows[lv].push_back(base + v);
        left[lv].push_back(l >= 0 ? base + l : total);
        right[lv].push_back(r >= 0 ? base + r : total);
        if (w[static_cast<size_t>(v)] >= 0) {
          xrow[lv].push_back(static_cast<int64_t>(words.size()));
          words.push_back(w[static_cast<size_t>(v)]);
        } else {
          xrow[lv].push_back(-1);
        }
        if (y[static_cast<size_t>(v)] >= 0) labelled.push_back(base + v), labels.push_back(y[static_cast<size_t>(v)]);
      }
      base += g.num_vertices();
    }
    levels_.clear();
    for (size_t lv = 0; lv < rows.size(); ++lv) {
      Level L;
      L.rows = ids_tensor(rows[lv]);
      L.has_children = lv > 0;
      if (L.has_children) L.left = ids_tensor(left[lv]), L.right = ids_tensor(right[lv]);
      if (std::any_of(xrow[lv].begin(), xrow[lv].end(), [](int64_t r) { return r >= 0; })) {
        for (int64_t& r : xrow[lv])
          if (r < 0) r = static_cast<int64_t>(words.size());
        L.x_rows = ids_tensor(xrow[lv]);
      }
      levels_.push_back(std::move(L));
    }
    vertices_ = total;
    words_ = ids_tensor(words);
    labelled_ = ids_tensor(labelled);
    labels_ = ids_tensor(labels);
  }

  torch::Tensor forward() override {
    const auto opts = torch::TensorOptions().dtype(dtype_);
    // The word term of every vertex with a word, one lookup (and for the
    // LSTM one GEMM) for the minibatch, plus a zero row for vertices without.
    torch::Tensor x = torch::cat({E_.index_select(0, words_), torch::zeros({1, E_.size(1)}, opts)}, 0);
    if (cell_ == TreeCell::lstm) x = x.mm(W_);
    torch::Tensor states = torch::zeros({vertices_ + 1, state_width()}, opts);
    for (const Level& L : levels_) {
      torch::Tensor x_term = L.x_rows.defined() ? x.index_select(0, L.x_rows) : torch::Tensor();
      torch::Tensor hcat, cl, cr;
      if (L.has_children) {
        torch::Tensor sl = states.index_select(0, L.left), sr = states.index_select(0, L.right);
        hcat = torch::cat({sl.narrow(1, 0, h_), sr.narrow(1, 0, h_)}, 1);
        if (cell_ == TreeCell::lstm) cl = sl.narrow(1, h_, h_), cr = sr.narrow(1, h_, h_);
      }
      states.index_copy_(0, L.rows, cell(L.rows.size(0), x_term, hcat, cl, cr));
    }
    return loss_of(states.index_select(0, labelled_).narrow(1, 0, h_));
  }

  std::vector<Level> levels_;
  int64_t vertices_ = 0;
  torch::Tensor words_, labelled_;
};

// ---- LSTM language model -----------------------------------------------------

// torch::nn::LSTM over the minibatch's chains, sorted by length and packed;
// the logits of all real tokens with one GEMM.
class PackedLstm final : public TorchStrategy {
 public:
  PackedLstm(std::string name, const ModelConfig& cfg, ParameterSet& ps)
      : TorchStrategy(std::move(name), cfg, ps),
        h_(cfg.hidden),
        E_(param("E")),
        Ws_(param("Ws")),
        bs_(param("bs")),
        lstm_(torch::nn::LSTMOptions(cfg.embed, cfg.hidden).num_layers(cfg.layers).bias(true)) {
    lstm_->to(dtype_);
    torch::NoGradGuard no_grad;
    for (int64_t l = 1; l <= cfg.layers; ++l) {
      const std::string k = std::to_string(l - 1), s = std::to_string(l);
      auto p = lstm_->named_parameters();
      p["weight_ih_l" + k].copy_(swap_gate_blocks(to_torch(ps["W" + s].value, dtype_).t(), h_));
      p["weight_hh_l" + k].copy_(swap_gate_blocks(to_torch(ps["U" + s].value, dtype_).t(), h_));
      p["bias_ih_l" + k].copy_(swap_gate_blocks(to_torch(ps["b" + s].value, dtype_), h_));
      // Sylva's cell has one bias; torch's second stays zero and untrained.
      p["bias_hh_l" + k].zero_();
      p["bias_hh_l" + k].requires_grad_(false);
    }
  }

 private:
  void prepare(std::span<const InputGraph> batch) override {
    std::vector<int64_t> order(batch.size());
    std::iota(order.begin(), order.end(), 0);
    for (const InputGraph& g : batch) {
      SYLVA_CHECK(g.num_vertices() > 0, "[", name_, "] sample '", g.source(), "' is empty");
      for (int32_t v = 0; v < g.num_vertices(); ++v) {
        std::span<const int32_t> c = g.children(v);
        SYLVA_CHECK(v == 0 ? c.empty() || (c.size() == 1 && c[0] < 0) : c.size() == 1 && c[0] == v - 1, "[",
                    name_, "] sample '", g.source(), "' is not a chain: vertex ", v, " must have the one child ",
                    v - 1);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return batch[static_cast<size_t>(a)].num_vertices() > batch[static_cast<size_t>(b)].num_vertices();
    });
    const int64_t B = static_cast<int64_t>(batch.size());
    const int64_t T = B ? batch[static_cast<size_t>(order[0])].num_vertices() : 0;
    std::vector<int64_t> words(static_cast<size_t>(T * B), 0), labels(words.size(), -1), lengths;
    for (int64_t j = 0; j < B; ++j) {
      const InputGraph& g = batch[static_cast<size_t>(order[static_cast<size_t>(j)])];
      const std::vector<int32_t>& w = g.ids("words");
      const std::vector<int32_t>& y = g.ids("labels");
      for (int32_t t = 0; t < g.num_vertices(); ++t) {
        SYLVA_CHECK(w[static_cast<size_t>(t)] >= 0, "[", name_, "] vertex ", t, " of sample '", g.source(),
                    "' has no word; every token of a chain needs one");
        words[static_cast<size_t>(t * B + j)] = w[static_cast<size_t>(t)];
        labels[static_cast<size_t>(t * B + j)] = y[static_cast<size_t>(t)];
      }
      lengths.push_back(g.num_vertices());
    }
    words_ = ids_tensor(words).view({T, B});
    lengths_ = ids_tensor(lengths);
    // The targets in the packed order of the outputs.
    labels_ = torch::nn::utils::rnn::pack_padded_sequence(ids_tensor(labels).view({T, B}), lengths_).data();
  }

  torch::Tensor forward() override {
    torch::Tensor x = F::embedding(words_, E_);  // [T, B, embed]
    auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, lengths_);
    torch::Tensor out = std::get<0>(lstm_->forward_with_packed_input(packed)).data();  // [tokens, h]
    return F::cross_entropy(torch::addmm(bs_, out, Ws_), labels_,
                            F::CrossEntropyFuncOptions().ignore_index(-1).reduction(torch::kSum));
  }

  void copy_grads() override {
    TorchStrategy::copy_grads();
    auto p = lstm_->named_parameters();
    for (int64_t l = 1; l <= cfg_.layers; ++l) {
      const std::string k = std::to_string(l - 1), s = std::to_string(l);
      auto back = [&](const std::string& torch_name, const std::string& sylva_name, bool transpose) {
        torch::Tensor& t = p[torch_name];
        torch::Tensor g = t.grad().defined() ? swap_gate_blocks(t.grad(), h_) : torch::Tensor();
        to_sylva(g.defined() && transpose ? g.t() : g, ps_[sylva_name].grad);
        t.mutable_grad() = torch::Tensor();
      };
      back("weight_ih_l" + k, "W" + s, true);
      back("weight_hh_l" + k, "U" + s, true);
      back("bias_ih_l" + k, "b" + s, false);
    }
  }

  int64_t h_;
  torch::Tensor E_, Ws_, bs_;
  torch::nn::LSTM lstm_;
  torch::Tensor words_, lengths_, labels_;
};

}  // namespace

std::vector<std::string> torch_strategy_names(Workload w) {
  switch (w) {
    case Workload::tree_lstm:
    case Workload::tree_fc: return {"libtorch-recursive", "libtorch-levels"};
    case Workload::var_lstm:
    case Workload::fixed_lstm: return {"libtorch-packed"};
  }
  return {};
}

std::unique_ptr<Strategy> make_torch_strategy(const std::string& name, const ModelConfig& cfg, ParameterSet& ps,
                                              int threads) {
  const std::vector<std::string> names = torch_strategy_names(cfg.workload);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    SYLVA_THROW("[libtorch] no strategy '", name, "' for workload ", workload_name(cfg.workload),
                "; it has: ", known);
  }
  set_threads(threads);
  if (name == "libtorch-recursive") return std::make_unique<RecursiveTrees>(name, cfg, ps);
  if (name == "libtorch-levels") return std::make_unique<LevelTrees>(name, cfg, ps);
  return std::make_unique<PackedLstm>(name, cfg, ps);
}

}  // namespace sylva::bench
