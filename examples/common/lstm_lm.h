// A stacked LSTM language model (Zaremba et al. 2014) over chain graphs,
// one vertex per token, as Sylva vertex functions and a program.
//
// Each layer is its own vertex function, applied over the same graphs in
// turn, rather than all layers inside one F:
//  - the input projection x·W + b of a layer does not depend on the
//    recurrence, so the program computes it for every vertex of the batch
//    as one GEMM and F pulls the result; only h·U stays in F, batched per
//    BFS level. With all layers inside F, layer l's input projection would
//    run once per level on a few rows instead;
//  - dropout between layers (and on the embeddings and the softmax input)
//    is then a program-level op over whole [V, h] blocks;
//  - any depth reuses the same cell definition, and each layer's F has one
//    dependency chain, so BFS levels stay as wide as the batch.
// The softmax over the vocabulary is not in F either: F pushes h, and the
// program computes the [V, vocab] logits of all vertices with one GEMM.
#pragma once

#include <sylva/sylva.h>

namespace sylva::examples {

struct LstmLmConfig {
  int64_t vocab = 0;
  int64_t embed = 200;
  int64_t hidden = 200;
  int64_t layers = 2;
  double dropout = 0.0;      // on the embeddings, between layers and on the softmax input
  double init_scale = 0.1;   // every parameter ~ U(-s, s), biases included (Zaremba et al.)
  DType dtype = DType::f32;
  /// Write the input projection x·W + b inside the cell (as a user who does
  /// not hoist it would) instead of in the program: the same model, for
  /// measuring eager batching.
  bool projection_in_cell = false;
  /// Write h·U gate by gate (h·U_g, U_g a column slice of U; with
  /// projection_in_cell also x·W_g): IOS merges them back (Optimisation::ios).
  bool per_gate = false;
};

/// Adds E [vocab, embed]; per layer l = 1..layers: W<l> [in, 4h], U<l>
/// [h, 4h], b<l> [4h]; and Ws [h, vocab], bs [vocab].
void add_lstm_lm_params(ParameterSet& ps, const LstmLmConfig& cfg);

/// The cell of layer `layer` (1-based): pulls the projected input
/// p = x·W + b [4h] (or pulls x and projects it, with projection_in_cell), gathers [h; c] from its predecessor (zeros at a chain's
/// start), gates = p + h·U split into i, f, o, u;
/// c' = σ(f)⊙c + σ(i)⊙tanh(u); h' = σ(o)⊙tanh(c'). Scatters [h'; c'] and
/// pushes h'.
VertexFunction lstm_cell(ParameterSet& ps, const LstmLmConfig& cfg, int64_t layer);

/// The model over a batch of chains with per-vertex ids "words" (inputs)
/// and "labels" (next words; -1 = no loss).
struct LstmLm {
  LstmLm(ParameterSet& ps, const LstmLmConfig& cfg);
  LstmLmConfig cfg;
  std::vector<VertexFunction> cells;  // one per layer
  Program program;
  Symbol logits;  // [V, vocab]
  Symbol loss;    // summed over labelled vertices (nats)
};

}  // namespace sylva::examples
