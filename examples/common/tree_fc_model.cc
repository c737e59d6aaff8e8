#include "tree_fc_model.h"

#include <algorithm>
#include <string>

namespace sylva::examples {

void add_tree_fc_params(ParameterSet& ps, const TreeFcConfig& c) {
  ps.add("E", {c.vocab, c.hidden}, Init::uniform(-c.init, c.init)).decay = false;
  ps.add("W", {2 * c.hidden, c.hidden}, Init::glorot());
  ps.add("b", {c.hidden}, Init::zeros()).decay = false;
  ps.add("Ws", {c.hidden, c.classes}, Init::glorot());
  ps.add("bs", {c.classes}, Init::zeros()).decay = false;
}

VertexFunction tree_fc_cell(ParameterSet& ps, const TreeFcConfig& c) {
  VertexFunction f("tree_fc", c.hidden, c.dtype);
  Symbol x = f.pull(c.hidden);
  Symbol h = relu(matmul(concat({f.gather(0), f.gather(1)}), f.param(ps["W"])) + x + f.param(ps["b"]));
  f.scatter(h);
  f.push(h);
  return f;
}

TreeFcModel::TreeFcModel(ParameterSet& ps, const TreeFcConfig& c)
    : cfg(c), cell(tree_fc_cell(ps, c)), program(c.dtype) {
  Symbol x = lookup(program.param(ps["E"]), program.input_ids("words"));
  hidden = program.apply(cell, x);
  labels = program.input_ids("labels");
  Symbol rows = hidden;
  if (c.select_labelled) {
    rows = select_rows(hidden, labels);
    labels = select_rows(labels, labels);
  }
  logits = matmul(rows, program.param(ps["Ws"])) + program.param(ps["bs"]);
  loss = softmax_cross_entropy(logits, labels);
}

int32_t tree_fc_label(std::span<const int32_t> leaf_words, int64_t classes) {
  SYLVA_CHECK(classes >= 1, "[tree_fc] classes must be >= 1, got ", classes);
  std::vector<int64_t> count(static_cast<size_t>(classes), 0);
  for (int32_t w : leaf_words) {
    SYLVA_CHECK(w >= 0, "[tree_fc] leaf word ids must be >= 0, got ", w);
    ++count[static_cast<size_t>(w % classes)];
  }
  return static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
}

std::vector<InputGraph> tree_fc_samples(std::mt19937_64& rng, int64_t n, int32_t leaves, const TreeFcConfig& cfg) {
  SYLVA_CHECK(n >= 0, "[tree_fc] number of trees must be >= 0, got ", n);
  SYLVA_CHECK(cfg.vocab >= 1 && cfg.vocab <= INT32_MAX, "[tree_fc] vocab must be in [1, 2^31), got ", cfg.vocab);
  const InputGraph shape = complete_binary_tree(leaves, "tree");
  std::uniform_int_distribution<int32_t> word(0, static_cast<int32_t>(cfg.vocab - 1));
  std::vector<InputGraph> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    InputGraph g = shape;
    g.set_source("tree " + std::to_string(i));
    std::vector<int32_t> words(static_cast<size_t>(g.num_vertices()), -1), leaf_words;
    leaf_words.reserve(static_cast<size_t>(leaves));
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      if (g.children(v).empty()) leaf_words.push_back(words[static_cast<size_t>(v)] = word(rng));
    std::vector<int32_t> labels(words.size(), -1);
    labels.back() = tree_fc_label(leaf_words, cfg.classes);
    g.set_ids("words", std::move(words));
    g.set_ids("labels", std::move(labels));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace sylva::examples
