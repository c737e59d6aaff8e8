// The binary constituency Tree-LSTM of Tai et al. (2015) with a softmax
// classifier at every node, as a Sylva vertex function and program.
#pragma once

#include <sylva/sylva.h>

namespace sylva::examples {

struct TreeLstmConfig {
  int64_t vocab = 0;     // embedding rows
  int64_t dim = 300;     // word vector size d
  int64_t hidden = 150;  // memory size h
  int64_t classes = 5;
  double dropout = 0.5;      // on the classifier input
  double emb_dropout = 0.0;  // on the word vectors
  double init_scale = 0.05;  // U(-s, s) for the embeddings
  DType dtype = DType::f32;
  /// Write the cell gate by gate, x·W_g + [h_l; h_r]·U_g + b_g with W_g,
  /// U_g, b_g column slices of W, U, b (same parameters, same results), as
  /// a user who does not stack the gate weights would: IOS merges the ten
  /// matmuls back into two (ExecutorOptions::ios).
  bool per_gate = false;
};

/// Adds the parameters E [vocab, d], W [d, 5h], U [2h, 5h], b [5h],
/// Ws [h, classes], bs [classes] to `ps`.
void add_tree_lstm_params(ParameterSet& ps, const TreeLstmConfig& cfg);

/// The cell: gates = x·W + [h_l; h_r]·U + b split into i, f_l, f_r, o, u;
/// c = σ(i)⊙tanh(u) + σ(f_l)⊙c_l + σ(f_r)⊙c_r; h = σ(o)⊙tanh(c). Scatters
/// [h; c] to the parent, pushes h.
VertexFunction tree_lstm_cell(ParameterSet& ps, const TreeLstmConfig& cfg);

/// The whole model over a batch with per-vertex ids "words" (-1 for
/// internal nodes) and "labels".
struct TreeLstmModel {
  TreeLstmModel(ParameterSet& ps, const TreeLstmConfig& cfg);
  TreeLstmConfig cfg;
  VertexFunction cell;
  Program program;
  Symbol hidden;  // [V, h]
  Symbol logits;  // [V, classes]
  Symbol loss;    // sum over labelled vertices
};

}  // namespace sylva::examples
