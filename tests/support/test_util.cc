#include "support/test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace sylva::test {

void attach_random_ids(std::mt19937_64& rng, InputGraph& g, int32_t vocab, int32_t classes) {
  std::uniform_int_distribution<int32_t> word(-1, vocab - 1), label(-1, classes - 1);
  std::vector<int32_t> x(static_cast<size_t>(g.num_vertices())), y(x.size());
  for (auto& v : x) v = word(rng);
  for (auto& v : y) v = label(rng);
  g.set_ids("x", std::move(x));
  g.set_ids("labels", std::move(y));
}

std::vector<InputGraph> random_id_trees(int n, uint64_t seed, int32_t vocab, int32_t classes) {
  std::mt19937_64 rng(seed);
  std::vector<InputGraph> out;
  for (int s = 0; s < n; ++s) {
    InputGraph g = random_tree(rng, 9, 2, false, "tree " + std::to_string(s));
    attach_random_ids(rng, g, vocab, classes);
    out.push_back(std::move(g));
  }
  return out;
}

DropoutTreeNet::DropoutTreeNet(ParameterSet& ps, int64_t vocab, double p, double q) {
  ps.add("E", {vocab, 4}, Init::uniform(-1, 1)).decay = false;
  ps.add("W", {8, 4}, Init::glorot());
  ps.add("Ws", {4, 3}, Init::glorot());
  VertexFunction f("f", 4, DType::f64);
  Symbol h = dropout(tanh(matmul(concat({f.pull(4), f.gather_reduce()}), f.param(ps["W"]))), p);
  f.scatter(h);
  f.push(h);
  Symbol hs = program.apply(f, lookup(program.param(ps["E"]), program.input_ids("x")));
  out = q > 0.0 ? dropout(hs, q) : hs;
  loss = softmax_cross_entropy(matmul(out, program.param(ps["Ws"])), program.input_ids("labels"));
}

ChainNet::ChainNet(ParameterSet& ps, int64_t vocab, int64_t hidden, DType dtype)
    : f("chain", hidden, dtype), program(dtype) {
  ps.add("E", {vocab, hidden}, Init::uniform(-0.5, 0.5));
  ps.add("W", {hidden, hidden}, Init::uniform(-0.5, 0.5));
  ps.add("U", {hidden, hidden}, Init::uniform(-0.5, 0.5));
  Symbol h = tanh(matmul(f.pull(hidden), f.param(ps["W"])) + matmul(f.gather(0), f.param(ps["U"])));
  f.scatter(h);
  f.push(h);
  loss = sum(program.apply(f, lookup(program.param(ps["E"]), program.input_ids("x"))));
}

std::vector<InputGraph> id_chains(int n, int32_t length, int32_t vocab) {
  std::vector<InputGraph> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(InputGraph::chain(length, "chain " + std::to_string(i)));
    std::vector<int32_t> ids(static_cast<size_t>(length));
    for (int32_t k = 0; k < length; ++k) ids[static_cast<size_t>(k)] = (i + k) % vocab;
    out.back().set_ids("x", std::move(ids));
  }
  return out;
}

double relative_error(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel()) return INFINITY;
  double diff = 0, scale = 1e-300;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::abs(a.at(i) - b.at(i)));
    scale = std::max({scale, std::abs(a.at(i)), std::abs(b.at(i))});
  }
  return diff / scale;
}

LossAndGrads loss_and_grads(const Program& program, ParameterSet& ps, const GraphBatch& batch, Symbol loss,
                            BatchingPolicy policy, uint64_t seed) {
  Executor ex(program, ps, {.policy = policy, .seed = seed});
  ex.forward(batch, Mode::train);
  LossAndGrads out;
  out.loss = ex.scalar(loss);
  ps.zero_grad();
  ex.backward(loss);
  for (Parameter* p : ps.all()) out.grads.push_back(p->grad.clone());
  return out;
}

double finite_difference_error(Executor& ex, const GraphBatch& batch, Symbol loss, Parameter& p, int64_t samples) {
  Tensor& w = p.value;
  double scale = 1e-8, worst = 0;
  for (int64_t i = 0; i < p.grad.numel(); ++i) scale = std::max(scale, std::abs(p.grad.at(i)));
  for (int64_t i = 0; i < w.numel(); i += 1 + w.numel() / samples) {
    const double h = 1e-5, orig = w.at(i);
    w.set(i, orig + h);
    ex.forward(batch, Mode::train);
    const double up = ex.scalar(loss);
    w.set(i, orig - h);
    ex.forward(batch, Mode::train);
    const double down = ex.scalar(loss);
    w.set(i, orig);
    worst = std::max(worst, std::abs((up - down) / (2 * h) - p.grad.at(i)) / scale);
  }
  return worst;
}

std::string data_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("SYLVA_DATA")) return fs::exists(env) ? env : "";
  if (const char* src = std::getenv("SYLVA_TEST_SOURCE_DIR")) {
    fs::path p = fs::path(src) / ".." / "shared" / "data";
    if (fs::exists(p)) return fs::canonical(p).string();
  }
  return "";
}

}  // namespace sylva::test
