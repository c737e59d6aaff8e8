#include "sylva/train/generators.h"

#include <functional>
#include <utility>

#include "sylva/core/error.h"

namespace sylva {
namespace {

// Largest leaf count whose full binary tree (2·leaves − 1 vertices) fits int32 ids.
constexpr int32_t kMaxLeaves = int32_t{1} << 30;

// Renumbers a tree given as kids[v] (slots, -1 = absent) rooted at `root`
// in post-order. Iterative, so a tall tree cannot overflow the stack.
InputGraph post_order(const std::vector<std::vector<int32_t>>& kids, int32_t root, const std::string& source) {
  std::vector<int32_t> post(kids.size(), -1);
  std::vector<std::pair<int32_t, size_t>> stack{{root, 0}};  // vertex, next slot to visit
  int32_t next = 0;
  while (!stack.empty()) {
    auto& [v, slot] = stack.back();
    const std::vector<int32_t>& k = kids[static_cast<size_t>(v)];
    if (slot == k.size()) {
      post[static_cast<size_t>(v)] = next++;
      stack.pop_back();
      continue;
    }
    const int32_t c = k[slot++];
    if (c >= 0) stack.emplace_back(c, 0);  // may invalidate v and slot: not used after
  }
  std::vector<std::vector<int32_t>> children(kids.size());
  for (size_t v = 0; v < kids.size(); ++v)
    for (int32_t c : kids[v])
      children[static_cast<size_t>(post[v])].push_back(c < 0 ? -1 : post[static_cast<size_t>(c)]);
  return InputGraph::from_children(children, source);
}

}  // namespace

InputGraph random_tree(std::mt19937_64& rng, int32_t max_vertices, int32_t max_arity, bool allow_holes,
                       const std::string& source) {
  SYLVA_CHECK(max_vertices >= 1, "[generators] random_tree: max_vertices must be >= 1, got ", max_vertices);
  SYLVA_CHECK(max_arity >= 1, "[generators] random_tree: max_arity must be >= 1, got ", max_arity);
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
  return post_order(kids, 0, source);
}

InputGraph random_binary_tree(std::mt19937_64& rng, int32_t leaves, const std::string& source) {
  SYLVA_CHECK(leaves >= 1 && leaves <= kMaxLeaves, "[generators] random_binary_tree: leaves must be in [1, ",
              kMaxLeaves, "], got ", leaves);
  // Rémy's algorithm: replace a uniformly chosen vertex x by a new internal
  // vertex whose children are x and a new leaf, on a uniformly chosen side.
  // Every shape with n internal vertices arises from the same number of
  // histories, so the shape is uniform.
  const size_t n = 2 * static_cast<size_t>(leaves) - 1;
  std::vector<std::vector<int32_t>> kids(1);
  kids.reserve(n);
  std::vector<int32_t> parent(1, -1);
  parent.reserve(n);
  int32_t root = 0;
  while (kids.size() < n) {
    const int32_t x = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(kids.size()) - 1)(rng);
    const bool leaf_left = std::bernoulli_distribution(0.5)(rng);
    const int32_t inner = static_cast<int32_t>(kids.size()), leaf = inner + 1;
    const int32_t p = parent[static_cast<size_t>(x)];
    if (p < 0) {
      root = inner;
    } else {
      for (int32_t& c : kids[static_cast<size_t>(p)])
        if (c == x) c = inner;
    }
    kids.push_back(leaf_left ? std::vector<int32_t>{leaf, x} : std::vector<int32_t>{x, leaf});
    kids.emplace_back();
    parent.push_back(p);
    parent.push_back(inner);
    parent[static_cast<size_t>(x)] = inner;
  }
  return post_order(kids, root, source);
}

InputGraph complete_binary_tree(int32_t leaves, const std::string& source) {
  SYLVA_CHECK(leaves >= 1 && leaves <= kMaxLeaves && (leaves & (leaves - 1)) == 0,
              "[generators] complete_binary_tree: leaves must be a power of two in [1, ", kMaxLeaves, "], got ",
              leaves);
  std::vector<std::vector<int32_t>> children(2 * static_cast<size_t>(leaves) - 1);
  int32_t next = 0;
  // Depth is log2(leaves), so recursion is safe.
  std::function<int32_t(int32_t)> build = [&](int32_t size) {
    if (size == 1) return next++;
    const int32_t l = build(size / 2), r = build(size / 2);
    children[static_cast<size_t>(next)] = {l, r};
    return next++;
  };
  build(leaves);
  return InputGraph::from_children(children, source);
}

std::vector<InputGraph> chains(std::span<const int32_t> lengths, const std::string& source_prefix) {
  std::vector<InputGraph> out;
  out.reserve(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    SYLVA_CHECK(lengths[i] >= 1, "[generators] chains: lengths[", i, "] must be >= 1, got ", lengths[i]);
    out.push_back(InputGraph::chain(lengths[i], source_prefix + " " + std::to_string(i)));
  }
  return out;
}

std::vector<int32_t> random_lengths(std::mt19937_64& rng, int32_t count, int32_t min_len, int32_t max_len) {
  SYLVA_CHECK(count >= 0, "[generators] random_lengths: count must be >= 0, got ", count);
  SYLVA_CHECK(min_len >= 1 && min_len <= max_len,
              "[generators] random_lengths: need 1 <= min_len <= max_len, got min_len ", min_len, ", max_len ",
              max_len);
  std::uniform_int_distribution<int32_t> len(min_len, max_len);
  std::vector<int32_t> out(static_cast<size_t>(count));
  for (int32_t& l : out) l = len(rng);
  return out;
}

InputGraph random_dag(std::mt19937_64& rng, int32_t n, int32_t max_fanin, const std::string& source) {
  SYLVA_CHECK(n >= 1, "[generators] random_dag: n must be >= 1, got ", n);
  SYLVA_CHECK(max_fanin >= 0, "[generators] random_dag: max_fanin must be >= 0, got ", max_fanin);
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  std::uniform_int_distribution<int32_t> fanin(0, max_fanin);
  for (int32_t v = 1; v < n; ++v) {
    int32_t k = fanin(rng);
    std::uniform_int_distribution<int32_t> pick(0, v - 1);
    for (int32_t i = 0; i < k; ++i) children[static_cast<size_t>(v)].push_back(pick(rng));
  }
  return InputGraph::from_children(children, source);
}

}  // namespace sylva
