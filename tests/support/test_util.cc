#include "support/test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

namespace sylva::test {

InputGraph random_tree(std::mt19937_64& rng, int32_t max_vertices, int32_t max_arity, bool allow_holes,
                       const std::string& source) {
  // Grow top-down (breadth-first) and number in post-order at the end.
  std::vector<std::vector<int32_t>> kids(1);
  std::uniform_int_distribution<int32_t> arity(1, max_arity);
  std::bernoulli_distribution leaf(0.35), hole(allow_holes ? 0.15 : 0.0);
  for (size_t v = 0; v < kids.size(); ++v) {
    if (kids.size() >= static_cast<size_t>(max_vertices) || (v > 0 && leaf(rng))) continue;
    int32_t a = arity(rng);
    for (int32_t s = 0; s < a && kids.size() < static_cast<size_t>(max_vertices); ++s) {
      if (hole(rng) && s + 1 < a) {
        kids[v].push_back(-1);
        continue;
      }
      kids[v].push_back(static_cast<int32_t>(kids.size()));
      kids.emplace_back();
    }
  }
  std::vector<int32_t> post(kids.size(), -1);
  int32_t next = 0;
  std::function<void(int32_t)> visit = [&](int32_t v) {
    for (int32_t c : kids[v])
      if (c >= 0) visit(c);
    post[v] = next++;
  };
  visit(0);
  std::vector<std::vector<int32_t>> children(kids.size());
  for (size_t v = 0; v < kids.size(); ++v)
    for (int32_t c : kids[v]) children[post[v]].push_back(c < 0 ? -1 : post[c]);
  return InputGraph::from_children(children, source);
}

InputGraph random_dag(std::mt19937_64& rng, int32_t n, int32_t max_fanin, const std::string& source) {
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  std::uniform_int_distribution<int32_t> fanin(0, max_fanin);
  for (int32_t v = 1; v < n; ++v) {
    int32_t k = fanin(rng);
    std::uniform_int_distribution<int32_t> pick(0, v - 1);
    for (int32_t i = 0; i < k; ++i) children[v].push_back(pick(rng));
  }
  return InputGraph::from_children(children, source);
}

void attach_random_ids(std::mt19937_64& rng, InputGraph& g, int32_t vocab, int32_t classes) {
  std::uniform_int_distribution<int32_t> word(-1, vocab - 1), label(-1, classes - 1);
  std::vector<int32_t> x(static_cast<size_t>(g.num_vertices())), y(x.size());
  for (auto& v : x) v = word(rng);
  for (auto& v : y) v = label(rng);
  g.set_ids("x", std::move(x));
  g.set_ids("labels", std::move(y));
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
