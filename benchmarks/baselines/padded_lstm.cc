// Padded batching for the LSTM language models, the way TensorFlow's
// dynamic unroll runs them: every minibatch is padded to its longest chain
// and unrolled time step by time step over [B, ·] blocks (one GEMM per layer
// per step over all B rows, padding included). Rows past a chain's end get
// word -1 (a zero input row), label -1 (no loss) and a 0/1 mask that zeroes
// their state, so the real tokens see exactly Sylva's computation.
#include <string>

#include "dd_models.h"
#include "strategies_internal.h"

namespace sylva::bench {
namespace {

class PaddedStrategy final : public dd::GraphStrategy {
 public:
  PaddedStrategy(const ModelConfig& cfg, ParameterSet& ps, const StrategyOptions& o) : GraphStrategy(ps, o), cfg_(cfg) {
    SYLVA_CHECK(cfg.workload == Workload::var_lstm || cfg.workload == Workload::fixed_lstm,
                "[bench] the padded strategy runs the LSTM workloads only, not ", workload_name(cfg.workload));
    E_ = &ps["E"];
    Ws_ = &ps["Ws"];
    bs_ = &ps["bs"];
    for (int64_t l = 1; l <= cfg.layers; ++l) {
      W_.push_back(&ps["W" + std::to_string(l)]);
      U_.push_back(&ps["U" + std::to_string(l)]);
      b_.push_back(&ps["b" + std::to_string(l)]);
    }
  }

  std::string name() const override { return "padded"; }

  StepStats step(std::span<const InputGraph> batch, bool train) override {
    return run_step(/*autobatch=*/false, train, [&](dd::Graph& g) { declare(g, batch); });
  }

 private:
  // Pads the batch to its longest chain and declares the unrolled graph.
  void declare(dd::Graph& g, std::span<const InputGraph> batch) {
    const int64_t B = static_cast<int64_t>(batch.size()), H = cfg_.hidden;
    int64_t T = 0;
    for (const InputGraph& c : batch) {
      for (int32_t v = 0; v < c.num_vertices(); ++v) {
        auto ch = c.children(v);
        SYLVA_CHECK((v == 0 && ch.empty()) || (ch.size() == 1 && ch[0] == v - 1), "[padded] ", c.source(),
                    " vertex ", v, " is not the successor of vertex ", v - 1, "; padding needs chains in vertex order");
      }
      T = std::max<int64_t>(T, c.num_vertices());
    }
    words_.assign(static_cast<size_t>(B), -1);
    labels_.assign(static_cast<size_t>(B), -1);
    std::vector<dd::Expr> x(static_cast<size_t>(T)), h(static_cast<size_t>(T)), c(static_cast<size_t>(T));
    std::vector<dd::Expr> mask(static_cast<size_t>(T), -1);
    for (int64_t t = 0; t < T; ++t) {
      bool padded = false;
      for (int64_t b = 0; b < B; ++b) {
        const InputGraph& sample = batch[static_cast<size_t>(b)];
        const bool real = t < sample.num_vertices();
        padded = padded || !real;
        words_[static_cast<size_t>(b)] = real ? sample.ids("words")[static_cast<size_t>(t)] : -1;
      }
      x[static_cast<size_t>(t)] = g.lookup(*E_, words_);
      if (padded) {
        mask_values_.assign(static_cast<size_t>(B * H), 0.0);
        for (int64_t b = 0; b < B; ++b)
          if (t < batch[static_cast<size_t>(b)].num_vertices())
            std::fill_n(mask_values_.begin() + b * H, H, 1.0);
        mask[static_cast<size_t>(t)] = g.constant(B, H, mask_values_);
      }
    }
    for (size_t l = 0; l < W_.size(); ++l) {
      for (int64_t t = 0; t < T; ++t) {
        auto [hn, cn] = dd::lstm_step(g, x[static_cast<size_t>(t)], t > 0 ? h[static_cast<size_t>(t - 1)] : -1,
                                      t > 0 ? c[static_cast<size_t>(t - 1)] : -1, *W_[l], *U_[l], *b_[l], H);
        if (mask[static_cast<size_t>(t)] >= 0) {
          hn = g.mul(hn, mask[static_cast<size_t>(t)]);
          cn = g.mul(cn, mask[static_cast<size_t>(t)]);
        }
        h[static_cast<size_t>(t)] = hn;
        c[static_cast<size_t>(t)] = cn;
      }
      x = h;
    }
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < B; ++b) {
        const InputGraph& sample = batch[static_cast<size_t>(b)];
        labels_[static_cast<size_t>(b)] = t < sample.num_vertices() ? sample.ids("labels")[static_cast<size_t>(t)] : -1;
      }
      g.loss(g.add_bias(g.matmul(x[static_cast<size_t>(t)], *Ws_), *bs_), labels_);
    }
  }

  ModelConfig cfg_;
  Parameter *E_, *Ws_, *bs_;
  std::vector<Parameter*> W_, U_, b_;
  std::vector<int32_t> words_, labels_;
  std::vector<double> mask_values_;
};

}  // namespace

std::unique_ptr<Strategy> make_padded_strategy(const ModelConfig& cfg, ParameterSet& ps,
                                               const StrategyOptions& options) {
  return std::make_unique<PaddedStrategy>(cfg, ps, options);
}

}  // namespace sylva::bench
