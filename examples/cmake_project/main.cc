// A Tree-FC model built against an installed Sylva: one forward and one
// backward over two tiny trees. Exits 0 only if the loss is finite.
#include <cmath>
#include <cstdio>

#include <sylva/sylva.h>

int main() {
  using namespace sylva;
  const int64_t vocab = 10, dim = 8, classes = 3;
  ParameterSet ps(DType::f32, /*seed=*/7);
  ps.add("E", {vocab, dim}, Init::uniform(-0.1, 0.1));
  ps.add("W", {3 * dim, dim}, Init::glorot());
  ps.add("b", {dim}, Init::zeros());
  ps.add("Ws", {dim, classes}, Init::glorot());

  // F: h = tanh([x, h_left, h_right] W + b), sent to the parent and pushed.
  VertexFunction f("tree_fc", /*message_width=*/dim);
  Symbol x = f.pull(dim), l = f.gather(0), r = f.gather(1);
  Symbol h = tanh(matmul(concat({x, l, r}), f.param(ps["W"])) + f.param(ps["b"]));
  f.scatter(h);
  f.push(h);

  Program p(DType::f32);
  Symbol hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("words")));
  Symbol loss = softmax_cross_entropy(matmul(hs, p.param(ps["Ws"])), p.input_ids("labels"), ir::Reduction::mean);

  // Two trees: 4(2(0, 1), 3) labelled at every vertex, and 2(0, 1) labelled at the root.
  InputGraph t0 = InputGraph::from_children({{}, {}, {0, 1}, {}, {2, 3}}, "tree 0");
  t0.set_ids("words", {1, 2, -1, 3, -1});
  t0.set_ids("labels", {0, 1, 2, 0, 1});
  InputGraph t1 = InputGraph::from_children({{}, {}, {0, 1}}, "tree 1");
  t1.set_ids("words", {4, 5, -1});
  t1.set_ids("labels", {-1, -1, 2});
  GraphBatch batch({&t0, &t1});

  Executor ex(p, ps, {.policy = BatchingPolicy::Bfs});
  ex.forward(batch, Mode::train);
  const double l0 = ex.scalar(loss);
  ps.zero_grad();
  ex.backward(loss);
  double gnorm = 0.0;
  for (const Parameter* prm : ps.all())
    for (int64_t i = 0; i < prm->grad.numel(); ++i) gnorm += prm->grad.at(i) * prm->grad.at(i);

  std::printf("loss %.6f  |grad| %.6f\n", l0, std::sqrt(gnorm));
  return std::isfinite(l0) && std::isfinite(gnorm) && gnorm > 0.0 ? 0 : 1;
}
