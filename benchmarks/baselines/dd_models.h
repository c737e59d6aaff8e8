// The workloads written the way a DyNet user writes them: per sample,
// recursion over the graph from the leaves, declaring one expression per op
// per vertex, and skipping terms that are zero (no child terms at a leaf, no
// word term at an internal vertex). Same parameters and math as Sylva's
// example models (examples/common), so losses and gradients agree.
#pragma once

#include <chrono>

#include "dynamic_decl.h"
#include "strategies_internal.h"
#include "strategy.h"

namespace sylva::bench::dd {

/// Declares `sample`'s expressions (cells and losses) into `g`. With
/// `dense`, every vertex declares the full cell as Sylva's F computes it
/// (word term with a zero row where there is no word, child terms with zero
/// rows for absent children): the same arithmetic as Sylva, for separating
/// the cost of the execution strategy from the work a DyNet user skips.
class ModelDeclarer {
 public:
  ModelDeclarer(const ModelConfig& cfg, ParameterSet& ps, bool dense = false);
  void declare(Graph& g, const InputGraph& sample);

 private:
  void tree_lstm(Graph& g, const InputGraph& s);
  void tree_fc(Graph& g, const InputGraph& s);
  void lstm(Graph& g, const InputGraph& s);

  ModelConfig cfg_;
  ParameterSet& ps_;
  bool dense_;
  std::vector<Parameter*> W_, U_, b_;  // per LSTM layer; [0] for the trees
  Parameter *E_, *Ws_, *bs_;
  Parameter *Ufl_ = nullptr, *Ufr_ = nullptr, *bf_ = nullptr;  // Tree-LSTM, dynet cell
  // Per-sample work arrays.
  std::vector<int32_t> order_;
  std::vector<Expr> h_, c_, x_;
};

/// A Strategy over a dd::Graph: declaring, running and differentiating a
/// minibatch, with the gradient bookkeeping (lookup tables zeroed only on
/// the rows the previous step touched) shared by every dd-based strategy.
class GraphStrategy : public Strategy {
 public:
  /// The optimiser step over the rows the last backward touched.
  void update() override;
  void synchronize() override;
  void download_parameters() override;

 protected:
  GraphStrategy(ParameterSet& ps, const StrategyOptions& o);
  /// Times declare(graph()) as construction, then forward (and backward).
  template <class Declare>
  StepStats run_step(bool autobatch, bool train, Declare&& declare) {
    last_train_ = train;
    auto t0 = std::chrono::steady_clock::now();
    graph_.clear();
    declare(graph_);
    const double declared = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return finish_step(declared, autobatch, train);
  }

 private:
  StepStats finish_step(double declared, bool autobatch, bool train);
  ParameterSet& ps_;
  Backend& backend_;
  Graph graph_;
  bool measure_;
  bool first_ = true;
  bool last_train_ = false;
  RowSparsity touched_;
  StrategyUpdate update_;
};

/// One step of Zaremba et al.'s LSTM on row blocks: gates = x·W + b, plus
/// h_prev·U when h_prev >= 0; blocks (i, f, o, u); c = σ(f)⊙c_prev +
/// σ(i)⊙tanh(u) (c_prev >= 0, else σ(i)⊙tanh(u)); h = σ(o)⊙tanh(c).
/// Returns {h, c}. Used per token (1 row) and per padded time step (B rows).
std::pair<Expr, Expr> lstm_step(Graph& g, Expr x, Expr h_prev, Expr c_prev, Parameter& W, Parameter& U, Parameter& b,
                                int64_t H);

/// Vertices of `g` children first (post-order from the roots).
void children_first(const InputGraph& g, std::vector<int32_t>& order);

}  // namespace sylva::bench::dd
