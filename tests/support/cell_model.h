// A small LSTM-like cell over random trees and DAGs, the invariance and
// precision tests' model: F reads `slots` children by slot (or, slots == 0,
// all of them through gather_reduce), pulls x = E[ids "x"], computes
// g = x·W + [h_children]·U + b, an LSTM's c and h (dropout on h), and the
// program puts a classifier (ids "labels") and an L2 term on every h.
#pragma once

#include <algorithm>
#include <vector>

#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"

namespace sylva::test {

struct CellModel {
  static constexpr int kVocab = 17, kClasses = 3, kD = 5, kH = 4;

  ParameterSet ps;
  Program p;
  Symbol loss, hs;

  // slots > 0: an LSTM-like cell reading `slots` children by slot; slots == 0:
  // the same cell over gather_reduce (any arity, for DAGs).
  CellModel(int slots, double dropout_p, DType dtype = DType::f64) : ps(dtype, 11), p(dtype) {
    ps.add("E", {kVocab, kD}, Init::uniform(-1, 1));
    ps.add("W", {kD, 4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("U", {std::max(slots, 1) * kH, 4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("b", {4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("Wo", {kH, kClasses}, Init::uniform(-1, 1));
    VertexFunction f("cell", 2 * kH, dtype);
    Symbol x = f.pull(kD);
    std::vector<Symbol> hs_in, cs_in;
    if (slots > 0) {
      for (int s = 0; s < slots; ++s) {
        auto [h, c] = split<2>(f.gather(s));
        hs_in.push_back(h);
        cs_in.push_back(c);
      }
    } else {
      auto [h, c] = split<2>(f.gather_reduce());
      hs_in.push_back(h);
      cs_in.push_back(c);
    }
    Symbol g = matmul(x, f.param(ps["W"])) + matmul(concat(hs_in), f.param(ps["U"])) + f.param(ps["b"]);
    auto [i, fg, o, u] = split<4>(g);
    Symbol csum = cs_in[0];
    for (size_t k = 1; k < cs_in.size(); ++k) csum = csum + cs_in[k];
    Symbol c = sigmoid(i) * tanh(u) + sigmoid(fg) * csum;
    Symbol h = dropout(sigmoid(o) * tanh(c), dropout_p);
    f.scatter(concat({h, c}));
    f.push(h);
    Symbol words = p.input_ids("x");
    hs = p.apply(f, lookup(p.param(ps["E"]), words));
    Symbol logits = matmul(hs, p.param(ps["Wo"]));
    loss = softmax_cross_entropy(logits, p.input_ids("labels")) + scale(sum(hs * hs), 0.1);
  }
};


}  // namespace sylva::test
