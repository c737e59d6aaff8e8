#include "lstm_lm.h"

#include <string>

namespace sylva::examples {
namespace {

std::string layer_param(const char* name, int64_t layer) { return name + std::to_string(layer); }

}  // namespace

void add_lstm_lm_params(ParameterSet& ps, const LstmLmConfig& c) {
  SYLVA_CHECK(c.vocab > 0 && c.embed > 0 && c.hidden > 0 && c.layers > 0,
              "[lstm_lm] vocab, embed, hidden and layers must be positive (got ", c.vocab, ", ", c.embed, ", ",
              c.hidden, ", ", c.layers, ")");
  Init init = Init::uniform(-c.init_scale, c.init_scale);
  ps.add("E", {c.vocab, c.embed}, init);
  for (int64_t l = 1; l <= c.layers; ++l) {
    ps.add(layer_param("W", l), {l == 1 ? c.embed : c.hidden, 4 * c.hidden}, init);
    ps.add(layer_param("U", l), {c.hidden, 4 * c.hidden}, init);
    ps.add(layer_param("b", l), {4 * c.hidden}, init);
  }
  ps.add("Ws", {c.hidden, c.vocab}, init);
  ps.add("bs", {c.vocab}, init);
}

VertexFunction lstm_cell(ParameterSet& ps, const LstmLmConfig& c, int64_t layer) {
  VertexFunction f("lstm" + std::to_string(layer), 2 * c.hidden, c.dtype);
  Symbol in = f.pull(c.projection_in_cell ? (layer == 1 ? c.embed : c.hidden) : 4 * c.hidden);
  Symbol W = c.projection_in_cell ? f.param(ps[layer_param("W", layer)]) : Symbol{};
  Symbol b = c.projection_in_cell ? f.param(ps[layer_param("b", layer)]) : Symbol{};
  Symbol U = f.param(ps[layer_param("U", layer)]);
  auto [h, cell] = split<2>(f.gather(0));
  // p = x·W + b (the pulled projection, or computed here) plus h·U: stacked, or one gate at a time.
  std::array<Symbol, 4> gates;
  if (c.per_gate) {
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t from = k * c.hidden, to = (k + 1) * c.hidden;
      Symbol pk = c.projection_in_cell ? matmul(in, slice(W, from, to)) + slice(b, from, to) : slice(in, from, to);
      gates[static_cast<size_t>(k)] = pk + matmul(h, slice(U, from, to));
    }
  } else {
    gates = split<4>((c.projection_in_cell ? matmul(in, W) + b : in) + matmul(h, U));
  }
  auto [i, fg, o, u] = gates;
  Symbol c2 = sigmoid(fg) * cell + sigmoid(i) * tanh(u);
  Symbol h2 = sigmoid(o) * tanh(c2);
  f.scatter(concat({h2, c2}));
  f.push(h2);
  return f;
}

// Every node is made in its own statement, so the node order (which keys
// dropout's random streams) does not depend on the compiler's order of
// evaluating arguments, and python/examples/var_lstm.py makes the same graph.
LstmLm::LstmLm(ParameterSet& ps, const LstmLmConfig& c) : cfg(c), program(c.dtype) {
  const Symbol E = program.param(ps["E"]);
  const Symbol words = program.input_ids("words");
  Symbol x = dropout(lookup(E, words), c.dropout);
  for (int64_t l = 1; l <= c.layers; ++l) {
    cells.push_back(lstm_cell(ps, c, l));
    Symbol in = x;
    if (!c.projection_in_cell) {
      const Symbol W = program.param(ps[layer_param("W", l)]);
      const Symbol b = program.param(ps[layer_param("b", l)]);
      in = matmul(x, W) + b;
    }
    x = dropout(program.apply(cells.back(), in), c.dropout);
  }
  const Symbol Ws = program.param(ps["Ws"]);
  const Symbol bs = program.param(ps["bs"]);
  logits = matmul(x, Ws) + bs;
  const Symbol labels = program.input_ids("labels");
  loss = softmax_cross_entropy(logits, labels);
}

}  // namespace sylva::examples
