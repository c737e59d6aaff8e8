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

const char* family_name(Family f) {
  return f == Family::tree ? "tree" : f == Family::chain ? "chain" : f == Family::dag ? "dag" : "gated tree";
}

VertexFunction family_cell(ParameterSet& ps, Family family, int64_t h) {
  const bool dag = family == Family::dag;
  ps.add("W", {dag ? h : 2 * h, h}, Init::glorot());
  VertexFunction f("f", h, DType::f64);
  const Symbol x = f.pull(h);
  const Symbol kids = dag                          ? f.gather_reduce()
                      : family == Family::gated_tree ? concat({f.gather(0) * x, f.gather(1) * x})
                                                     : concat({f.gather(0), f.gather(1)});
  const Symbol out = tanh(matmul(kids, f.param(ps["W"])) + x);
  f.scatter(out);
  f.push(out);
  return f;
}

std::vector<std::vector<InputGraph>> growing_batches(Family family, uint64_t seed, int32_t vocab, int32_t classes) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<InputGraph>> out;
  for (int n : {3, 7, 1, 5}) {
    std::vector<InputGraph> graphs;
    for (int s = 0; s < n; ++s) {
      const int size = 1 + static_cast<int>(rng() % 15);
      const std::string src = "g" + std::to_string(out.size()) + "." + std::to_string(s);
      graphs.push_back(family == Family::dag ? random_dag(rng, size, 3, src)
                                             : random_tree(rng, size, family == Family::chain ? 1 : 2, true, src));
      attach_random_ids(rng, graphs.back(), vocab, classes);
    }
    out.push_back(std::move(graphs));
  }
  return out;
}

std::string case_name(Family family, int readers, BatchingPolicy policy) {
  return std::string(family_name(family)) + ", readers " + std::to_string(readers) +
         (policy == BatchingPolicy::Bfs ? ", bfs" : ", serial");
}

StepRecord step_through(Executor& ex, ParameterSet& ps, Symbol loss, Symbol shown,
                        const std::vector<std::vector<InputGraph>>& batches, bool fd) {
  StepRecord s;
  for (const std::vector<InputGraph>& graphs : batches) {
    const GraphBatch b = GraphBatch::of(graphs);
    ex.forward(b, Mode::train);
    s.losses.push_back(ex.scalar(loss));
    ps.zero_grad();
    ex.backward(loss);
    const auto it = ex.sparse_grads().find("E");
    s.sparse_rows.push_back(it == ex.sparse_grads().end() ? std::vector<int32_t>{} : it->second);
    if (&graphs == &batches.back()) {
      for (Parameter* prm : ps.all()) s.grads.push_back(prm->grad.clone());
      s.shown = ex.value(shown);
    }
    if (fd)
      for (const char* name : {"W", "E"})
        s.fd_error = std::max(s.fd_error, finite_difference_error(ex, b, loss, ps[name], 40));
  }
  return s;
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
