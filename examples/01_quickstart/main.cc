// Quick start: a Tree-FC vertex function over two tiny trees, one training step.
#include <cstdio>
#include <sylva/sylva.h>

using namespace sylva;

int main() {
  ParameterSet ps(DType::f32, /*seed=*/1);
  ps.add("E", {10, 8}, Init::uniform(-0.1, 0.1));
  ps.add("W", {8 + 16, 8}, Init::glorot());
  ps.add("Wo", {8, 2}, Init::glorot());

  VertexFunction f("tree_fc", /*message_width=*/8);  // h = relu([x; h_l + h_r]·W)
  Symbol h = relu(matmul(concat({f.pull(8), f.gather(0), f.gather(1)}), f.param(ps["W"])));
  f.scatter(h);
  f.push(h);

  Program p;
  Symbol hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("words")));
  Symbol loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels"));

  std::vector<InputGraph> trees{InputGraph::from_children({{}, {}, {0, 1}}), InputGraph::chain(2)};
  trees[0].set_ids("words", {3, 7, -1});
  trees[0].set_ids("labels", {-1, -1, 1});
  trees[1].set_ids("words", {2, 5});
  trees[1].set_ids("labels", {-1, 0});
  Trainer trainer(p, ps, loss, Adam({.lr = 0.01}));
  for (int step = 0; step < 5; ++step) std::printf("step %d loss %.4f\n", step, trainer.step(GraphBatch::of(trees)).loss);
}
