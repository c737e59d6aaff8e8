// Small labelled inputs shared by the baseline tests (libtorch, DyNet):
// random parameters, trees with holes and unary vertices, and chains.
#pragma once

#include <random>
#include <string>
#include <vector>

#include <sylva/sylva.h>

#include "support/test_util.h"

namespace sylva::bench::testing_samples {

/// Every parameter ~ U(-0.5, 0.5), biases included, so no gradient is
/// trivially zero and no ReLU input sits at 0.
inline void randomize(ParameterSet& ps, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (Parameter* p : ps.all())
    for (int64_t i = 0; i < p->value.numel(); ++i) p->value.set(i, u(rng));
}

/// Random binary trees (words on the leaves) and one hand-built tree with a
/// unary vertex of each kind (absent left slot; a single slot), an internal
/// vertex with a word and a leaf without one; labels in [-1, classes) on
/// every vertex, and every root labelled.
inline std::vector<InputGraph> labelled_trees(std::mt19937_64& rng, int32_t vocab, int32_t classes) {
  std::vector<InputGraph> out;
  for (int i = 0; i < 5; ++i) out.push_back(random_binary_tree(rng, 1 + i * 2, "tree " + std::to_string(i)));
  out.push_back(InputGraph::from_children({{}, {}, {-1, 0}, {2}, {3, 1}, {}, {4, 5}}, "holes"));
  std::uniform_int_distribution<int32_t> word(0, vocab - 1), label(-1, classes - 1);
  for (InputGraph& g : out) {
    std::vector<int32_t> w(static_cast<size_t>(g.num_vertices())), y(w.size());
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      w[static_cast<size_t>(v)] = g.children(v).empty() ? word(rng) : -1;
      y[static_cast<size_t>(v)] = label(rng);
    }
    if (g.source() == "holes") w[3] = word(rng), w[5] = -1;
    y.back() = 1;  // every tree has a labelled root
    g.set_ids("words", std::move(w));
    g.set_ids("labels", std::move(y));
  }
  return out;
}

/// Chains of the given lengths with random words and next-word labels in
/// [-1, vocab).
inline std::vector<InputGraph> labelled_sentences(std::mt19937_64& rng, const std::vector<int32_t>& lengths,
                                                  int32_t vocab) {
  std::vector<InputGraph> out = chains(lengths, "sentence");
  std::uniform_int_distribution<int32_t> word(0, vocab - 1), label(-1, vocab - 1);
  for (InputGraph& g : out) {
    std::vector<int32_t> w(static_cast<size_t>(g.num_vertices())), y(w.size());
    for (auto& x : w) x = word(rng);
    for (auto& x : y) x = label(rng);
    g.set_ids("words", std::move(w));
    g.set_ids("labels", std::move(y));
  }
  return out;
}

}  // namespace sylva::bench::testing_samples
