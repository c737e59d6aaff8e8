#include "tree_lstm_model.h"

namespace sylva::examples {

TreeLstmCell parse_tree_lstm_cell(const std::string& name) {
  if (name == "tai") return TreeLstmCell::tai;
  if (name == "dynet") return TreeLstmCell::dynet;
  SYLVA_THROW("unknown Tree-LSTM cell '", name, "' (expected tai or dynet)");
}

const char* tree_lstm_cell_name(TreeLstmCell c) { return c == TreeLstmCell::tai ? "tai" : "dynet"; }

namespace {
// Gate blocks computed from x·W + [h_l; h_r]·U + b.
int64_t stacked_gates(const TreeLstmConfig& c) { return c.cell == TreeLstmCell::tai ? 5 : 3; }
}  // namespace

void add_tree_lstm_params(ParameterSet& ps, const TreeLstmConfig& c) {
  const int64_t g = stacked_gates(c);
  ps.add("E", {c.vocab, c.dim}, Init::uniform(-c.init_scale, c.init_scale)).decay = false;
  ps.add("W", {c.dim, g * c.hidden}, Init::glorot());
  ps.add("U", {2 * c.hidden, g * c.hidden}, Init::glorot());
  ps.add("b", {g * c.hidden}, Init::zeros()).decay = false;
  if (c.cell == TreeLstmCell::dynet) {
    ps.add("Ufl", {c.hidden, c.hidden}, Init::glorot());
    ps.add("Ufr", {c.hidden, c.hidden}, Init::glorot());
    ps.add("bf", {c.hidden}, Init::zeros()).decay = false;
  }
  ps.add("Ws", {c.hidden, c.classes}, Init::glorot());
  ps.add("bs", {c.classes}, Init::zeros()).decay = false;
}

VertexFunction tree_lstm_cell(ParameterSet& ps, const TreeLstmConfig& c) {
  VertexFunction f("tree_lstm", 2 * c.hidden, c.dtype);
  Symbol x = f.pull(c.dim);
  auto [hl, cl] = split<2>(f.gather(0));
  auto [hr, cr] = split<2>(f.gather(1));
  Symbol hh2 = concat({hl, hr}), W = f.param(ps["W"]), U = f.param(ps["U"]), b = f.param(ps["b"]);
  const int64_t n = stacked_gates(c);
  std::vector<Symbol> gates;
  if (c.per_gate) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t from = k * c.hidden, to = (k + 1) * c.hidden;
      gates.push_back(matmul(x, slice(W, from, to)) + matmul(hh2, slice(U, from, to)) + slice(b, from, to));
    }
  } else {
    const Symbol xw = matmul(x, W), hu = matmul(hh2, U);  // one statement each: a defined node order
    gates = split(xw + hu + b, n);
  }
  Symbol cc, o;
  if (c.cell == TreeLstmCell::tai) {
    const Symbol &i = gates[0], &fl = gates[1], &fr = gates[2], &u = gates[4];
    o = gates[3];
    cc = sigmoid(i) * tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr;
  } else {
    const Symbol &i = gates[0], &u = gates[2];
    o = gates[1];
    const Symbol bf = f.param(ps["bf"]);
    const Symbol fl = sigmoid(matmul(hl, f.param(ps["Ufl"])) + bf), fr = sigmoid(matmul(hr, f.param(ps["Ufr"])) + bf);
    cc = sigmoid(i) * tanh(u) + fl * cl + fr * cr;
  }
  Symbol hh = sigmoid(o) * tanh(cc);
  f.scatter(concat({hh, cc}));
  f.push(hh);
  return f;
}

// Every node is made in its own statement, so the node order (which keys
// dropout's random streams) does not depend on the compiler's order of
// evaluating arguments, and python/examples/tree_lstm.py makes the same graph.
TreeLstmModel::TreeLstmModel(ParameterSet& ps, const TreeLstmConfig& c)
    : cfg(c), cell(tree_lstm_cell(ps, c)), program(c.dtype) {
  const Symbol words = program.input_ids("words");
  const Symbol E = program.param(ps["E"]);
  const Symbol x = dropout(lookup(E, words), c.emb_dropout);
  hidden = program.apply(cell, x);
  const Symbol Ws = program.param(ps["Ws"]);
  const Symbol bs = program.param(ps["bs"]);
  logits = matmul(dropout(hidden, c.dropout), Ws) + bs;
  const Symbol labels = program.input_ids("labels");
  loss = softmax_cross_entropy(logits, labels);
}

}  // namespace sylva::examples
