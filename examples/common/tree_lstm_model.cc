#include "tree_lstm_model.h"

namespace sylva::examples {

void add_tree_lstm_params(ParameterSet& ps, const TreeLstmConfig& c) {
  ps.add("E", {c.vocab, c.dim}, Init::uniform(-c.init_scale, c.init_scale)).decay = false;
  ps.add("W", {c.dim, 5 * c.hidden}, Init::glorot());
  ps.add("U", {2 * c.hidden, 5 * c.hidden}, Init::glorot());
  ps.add("b", {5 * c.hidden}, Init::zeros()).decay = false;
  ps.add("Ws", {c.hidden, c.classes}, Init::glorot());
  ps.add("bs", {c.classes}, Init::zeros()).decay = false;
}

VertexFunction tree_lstm_cell(ParameterSet& ps, const TreeLstmConfig& c) {
  VertexFunction f("tree_lstm", 2 * c.hidden, c.dtype);
  Symbol x = f.pull(c.dim);
  auto [hl, cl] = split<2>(f.gather(0));
  auto [hr, cr] = split<2>(f.gather(1));
  Symbol hh2 = concat({hl, hr}), W = f.param(ps["W"]), U = f.param(ps["U"]), b = f.param(ps["b"]);
  std::array<Symbol, 5> gates;
  if (c.per_gate) {
    for (int64_t k = 0; k < 5; ++k) {
      const int64_t from = k * c.hidden, to = (k + 1) * c.hidden;
      gates[static_cast<size_t>(k)] =
          matmul(x, slice(W, from, to)) + matmul(hh2, slice(U, from, to)) + slice(b, from, to);
    }
  } else {
    gates = split<5>(matmul(x, W) + matmul(hh2, U) + b);
  }
  auto [i, fl, fr, o, u] = gates;
  Symbol cc = sigmoid(i) * tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr;
  Symbol hh = sigmoid(o) * tanh(cc);
  f.scatter(concat({hh, cc}));
  f.push(hh);
  return f;
}

TreeLstmModel::TreeLstmModel(ParameterSet& ps, const TreeLstmConfig& c)
    : cfg(c), cell(tree_lstm_cell(ps, c)), program(c.dtype) {
  Symbol words = program.input_ids("words");
  Symbol x = dropout(lookup(program.param(ps["E"]), words), c.emb_dropout);
  hidden = program.apply(cell, x);
  logits = matmul(dropout(hidden, c.dropout), program.param(ps["Ws"])) + program.param(ps["bs"]);
  loss = softmax_cross_entropy(logits, program.input_ids("labels"));
}

}  // namespace sylva::examples
