// The binary constituency Tree-LSTM of Tai et al. (2015) with a softmax
// classifier at every node, as a Sylva vertex function and program; and the
// smaller cell of the DyNet benchmarks (TreeLstmCell::dynet).
#pragma once

#include <string>

#include <sylva/sylva.h>

namespace sylva::examples {

/// Which Tree-LSTM cell:
///  - tai: Tai et al.'s binary cell, five gates from x·W + [h_l; h_r]·U + b
///    (i, f_l, f_r, o, u).
///  - dynet: the cell of the DyNet benchmarks' treenn: three gates (i, o,
///    u) from x·W + [h_l; h_r]·U + b, and one forget gate per child from
///    that child's h alone, f_l = σ(h_l·Uf_l + b_f), f_r = σ(h_r·Uf_r + b_f)
///    (about a quarter fewer multiply-adds than tai).
/// At a leaf (no children) and an internal vertex (no word) both compute
/// exactly what a DyNet user's recursion declares there.
enum class TreeLstmCell : uint8_t { tai, dynet };
/// "tai" or "dynet"; sylva::Error naming `name` otherwise.
TreeLstmCell parse_tree_lstm_cell(const std::string& name);
const char* tree_lstm_cell_name(TreeLstmCell c);

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
  /// matmuls back into two (Optimisation::ios).
  bool per_gate = false;
  TreeLstmCell cell = TreeLstmCell::tai;
};

/// Adds the parameters to `ps`: E [vocab, d], Ws [h, classes], bs [classes]
/// and, for the tai cell, W [d, 5h], U [2h, 5h], b [5h]; for the dynet
/// cell, W [d, 3h], U [2h, 3h], b [3h], Ufl [h, h], Ufr [h, h], bf [h].
void add_tree_lstm_params(ParameterSet& ps, const TreeLstmConfig& cfg);

/// The cell (cfg.cell): tai: gates = x·W + [h_l; h_r]·U + b split into i,
/// f_l, f_r, o, u; c = σ(i)⊙tanh(u) + σ(f_l)⊙c_l + σ(f_r)⊙c_r; dynet: i, o,
/// u from x·W + [h_l; h_r]·U + b and f_l, f_r as above; then
/// h = σ(o)⊙tanh(c). Scatters [h; c] to the parent, pushes h.
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
