// Tree-FC, the synthetic tree workload of Cavs (USENIX ATC 2018): one fully
// connected layer at every vertex of a complete binary tree, a softmax
// classifier at the root. It measures how fast a system runs a cheap F over
// many vertices, so its metric is vertices per second.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::examples {

struct TreeFcConfig {
  int64_t vocab = 1000;  // leaf word ids lie in [0, vocab)
  int64_t hidden = 256;  // h
  int64_t classes = 10;
  DType dtype = DType::f32;
  double init = 0.1;  // E ~ U(-init, init); W and Ws are Glorot, biases zero
  /// The classifier runs on the labelled rows alone (select_rows); false
  /// runs it on every vertex, as before row selection (for ablations).
  bool select_labelled = true;
};

/// Adds E [vocab, h], W [2h, h], b [h], Ws [h, classes], bs [classes] to `ps`.
void add_tree_fc_params(ParameterSet& ps, const TreeFcConfig& cfg);

/// F: h = relu([h_l; h_r]·W + x + b), where x is the pulled row (the leaf's
/// word vector, zeros on internal vertices) and h_l, h_r the children's
/// messages (zeros where absent). Scatters h to the parent and pushes h.
VertexFunction tree_fc_cell(ParameterSet& ps, const TreeFcConfig& cfg);

/// The whole model over a batch with per-vertex ids "words" (-1 on internal
/// vertices) and "labels" (-1 everywhere but the root): x = lookup(E, words),
/// hidden = apply(F, x), logits = select_rows(hidden, labels)·Ws + bs (one
/// row per labelled vertex, i.e. per root, in tree order), loss = the
/// softmax cross-entropy summed over them. With cfg.select_labelled false,
/// logits has a row per vertex and the loss skips unlabelled ones.
///
/// @code
/// TreeFcConfig cfg{.hidden = 64};
/// ParameterSet ps(cfg.dtype, /*seed=*/1);
/// add_tree_fc_params(ps, cfg);
/// TreeFcModel model(ps, cfg);
/// std::mt19937_64 rng(1);
/// std::vector<InputGraph> trees = tree_fc_samples(rng, 64, 256, cfg);
/// Trainer trainer(model.program, ps, model.loss, Adagrad({.lr = 0.05}));
/// StepResult r = trainer.step(GraphBatch::of(trees));
/// @endcode
struct TreeFcModel {
  TreeFcModel(ParameterSet& ps, const TreeFcConfig& cfg);
  TreeFcConfig cfg;
  VertexFunction cell;
  Program program;
  Symbol hidden;  // [V, h]
  Symbol logits;  // [roots, classes] ([V, classes] without select_labelled)
  Symbol labels;  // the labels of logits' rows
  Symbol loss;    // sum over the roots
};

/// The root label of a tree with these leaf words: the most frequent leaf
/// class, where word w has class w mod classes (ties go to the smaller
/// class). The task is learnable by the model itself: with x a non-negative
/// indicator of the word's class and W = [I; I], the root's h counts the
/// leaves of each class, and Ws = I picks the largest count.
int32_t tree_fc_label(std::span<const int32_t> leaf_words, int64_t classes);

/// `n` complete binary trees with `leaves` leaves each (a power of two;
/// sylva::Error otherwise), sources "tree 0", "tree 1", ...: uniform leaf
/// words in [0, cfg.vocab) drawn from `rng`, "words" -1 on internal
/// vertices, "labels" tree_fc_label at the root and -1 elsewhere.
std::vector<InputGraph> tree_fc_samples(std::mt19937_64& rng, int64_t n, int32_t leaves, const TreeFcConfig& cfg);

}  // namespace sylva::examples
