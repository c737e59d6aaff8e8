// Workload names, parameters and samples shared by every strategy.
#include <random>

#include "example_util.h"
#include "lstm_lm.h"
#include "ptb.h"
#include "tree_fc_model.h"
#include "tree_lstm_model.h"
#include "treebank.h"
#include "strategies_internal.h"

namespace sylva::bench {

std::string workload_name(Workload w) {
  switch (w) {
    case Workload::tree_lstm: return "tree-lstm";
    case Workload::var_lstm: return "var-lstm";
    case Workload::fixed_lstm: return "fixed-lstm";
    case Workload::tree_fc: return "tree-fc";
  }
  return "?";
}

Workload parse_workload(const std::string& name) {
  for (Workload w : {Workload::tree_lstm, Workload::var_lstm, Workload::fixed_lstm, Workload::tree_fc})
    if (workload_name(w) == name) return w;
  SYLVA_THROW("[bench] unknown workload '", name, "' (expected tree-lstm, var-lstm, fixed-lstm or tree-fc)");
}

void add_params(ParameterSet& ps, const ModelConfig& c) {
  switch (c.workload) {
    case Workload::tree_lstm:
      examples::add_tree_lstm_params(ps, {.vocab = c.vocab, .dim = c.embed, .hidden = c.hidden, .classes = c.classes,
                                          .dtype = c.dtype, .cell = c.cell});
      return;
    case Workload::var_lstm: case Workload::fixed_lstm:
      examples::add_lstm_lm_params(ps, {.vocab = c.vocab, .embed = c.embed, .hidden = c.hidden, .layers = c.layers,
                                        .dtype = c.dtype});
      return;
    case Workload::tree_fc:
      examples::add_tree_fc_params(ps, {.vocab = c.vocab, .hidden = c.hidden, .classes = c.classes, .dtype = c.dtype});
      return;
  }
}

std::vector<std::string> builtin_strategy_names(Workload w) {
  std::vector<std::string> names = {"sylva", "sylva-serial", "dynamic-decl", "dynamic-decl-autobatch",
                                    "dynamic-decl-autobatch-dense"};
  if (w == Workload::var_lstm || w == Workload::fixed_lstm) names.push_back("padded");
  return names;
}

std::unique_ptr<Strategy> make_builtin_strategy(const std::string& name, const ModelConfig& cfg, ParameterSet& ps,
                                                const StrategyOptions& options) {
  if (name == "sylva") return make_sylva_strategy(cfg, ps, BatchingPolicy::Bfs, options);
  if (name == "sylva-serial") return make_sylva_strategy(cfg, ps, BatchingPolicy::Serial, options);
  if (name == "sylva-bf16") {  // sylva with bf16 GEMMs, whatever --precision says (to run beside fp32)
    StrategyOptions bf16 = options;
    bf16.executor.precision = Precision::bf16;
    return make_sylva_strategy(cfg, ps, BatchingPolicy::Bfs, bf16);
  }
  if (name == kGemmFloor) return make_sylva_strategy(cfg, ps, BatchingPolicy::Bfs, options, true);
  SYLVA_CHECK(!cfg.projection_in_cell && !cfg.per_gate,
              "[bench] projection_in_cell and per_gate are variants of Sylva's model only, not of '", name, "'");
  if (name == "dynamic-decl") return make_dynamic_decl_strategy(cfg, ps, false, false, options);
  if (name == "dynamic-decl-autobatch") return make_dynamic_decl_strategy(cfg, ps, true, false, options);
  if (name == "dynamic-decl-autobatch-dense") return make_dynamic_decl_strategy(cfg, ps, true, true, options);
  if (name == "padded") return make_padded_strategy(cfg, ps, options);
  SYLVA_THROW("[bench] unknown strategy '", name, "' (built in: sylva, sylva-bf16, sylva-serial, dynamic-decl, "
              "dynamic-decl-autobatch, dynamic-decl-autobatch-dense, padded, gemm-floor; libtorch-* need a build with "
              "libtorch)");
}

StrategyUpdate::StrategyUpdate(const StrategyOptions& o, std::string who) : who_(std::move(who)) {
  if (o.optimizer != "none") opt_ = examples::make_optimizer(o.optimizer, o.lr, who_);
}

void StrategyUpdate::run(ParamStore& store, const RowSparsity& sparse) {
  SYLVA_CHECK(opt_ != nullptr, "[bench] strategy ", who_, " was made without an optimizer (--optimizer none)");
  if (store.update_side() == Side::host) {
    opt_->step(store.parameters(), &sparse);
    store.wrote(Side::host, opt_->updates_only_sparse_rows() ? &sparse : nullptr);  // a device uploads them
    return;
  }
  const size_t n = store.parameters().all().size();
  if (!sums_) sums_ = std::make_unique<Buffer>(store.backend().memory());
  sums_->reserve(std::max<size_t>(n, 1) * sizeof(double));
  auto* sums = static_cast<double*>(sums_->data());
  queue_gradient_sums(store, sparse, 0.0, sums);
  host_sums_.resize(n);
  store.backend().download(host_sums_.data(), sums, n * sizeof(double));
  opt_->step(store, &sparse, 0.0, 1.0, host_sums_);
}

namespace {
std::string missing(const char* what, const std::vector<std::string>& looked) {
  std::string s = std::string("[bench] ") + what + " not found; looked in:";
  for (const std::string& l : looked) s += "\n  " + l;
  return s + "\n(set SYLVA_DATA or pass --data)";
}
}  // namespace

Samples load_samples(Workload w, const SampleOptions& o) {
  Samples out;
  std::vector<std::string> looked;
  switch (w) {
    case Workload::tree_lstm: {
      std::string dir = examples::find_sst(o.data_dir.empty() ? "" : o.data_dir + "/sst", looked);
      SYLVA_CHECK(!dir.empty(), missing("the Stanford Sentiment Treebank", looked));
      examples::Treebank tb = examples::load_sst(dir);
      out.graphs = std::move(tb.train);
      out.vocab = tb.vocab.size();
      out.classes = 5;
      out.unit = "sentences";
      out.description = "SST train (" + dir + "), " + std::to_string(out.graphs.size()) + " trees";
      return out;
    }
    case Workload::var_lstm: case Workload::fixed_lstm: {
      std::string dir = examples::find_ptb(o.data_dir.empty() ? "" : o.data_dir + "/ptb", looked);
      SYLVA_CHECK(!dir.empty(), missing("the Penn Treebank", looked));
      examples::PtbCorpus ptb = examples::load_ptb(dir);
      const auto vocab = static_cast<int32_t>(ptb.vocab.size());
      const std::string src = dir + "/ptb.train.txt";
      if (w == Workload::var_lstm) {
        out.graphs = examples::sentence_chains(ptb.train, ptb.vocab.id("<eos>"), vocab, src);
        out.description = "PTB train sentences (" + dir + "), " + std::to_string(out.graphs.size()) + " chains";
      } else {
        out.graphs = examples::stream_chains(ptb.train, o.stream_length, vocab, src);
        out.description = "PTB train stream in " + std::to_string(o.stream_length) + "-token chains, " +
                          std::to_string(out.graphs.size()) + " chains";
      }
      out.vocab = vocab;
      out.classes = vocab;
      out.unit = "words";
      return out;
    }
    case Workload::tree_fc: {
      examples::TreeFcConfig cfg;
      std::mt19937_64 rng(o.seed);
      out.graphs = examples::tree_fc_samples(rng, o.tree_fc_trees, o.leaves, cfg);
      out.vocab = cfg.vocab;
      out.classes = cfg.classes;
      out.unit = "vertices";
      out.description = std::to_string(o.tree_fc_trees) + " complete binary trees of " + std::to_string(o.leaves) +
                        " leaves (synthetic)";
      return out;
    }
  }
  SYLVA_THROW("[bench] unknown workload");
}

}  // namespace sylva::bench
