#include "sylva/runtime/input_graph.h"

#include <algorithm>
#include <limits>

#include "sylva/core/error.h"

namespace sylva {

namespace {

// "[input_graph] sample train.txt:17: " — sources that already say "sample 3"
// are not prefixed twice.
std::string prefix(const std::string& source) {
  if (source.empty()) return "[input_graph] sample (unnamed): ";
  if (source.rfind("sample", 0) == 0) return "[input_graph] " + source + ": ";
  return "[input_graph] sample " + source + ": ";
}

// Shown in cycle errors; long cycles are elided in the middle.
std::string format_cycle(const std::vector<int32_t>& cycle) {
  constexpr size_t kShown = 8;
  std::string s;
  for (size_t i = 0; i < cycle.size(); ++i) {
    if (cycle.size() > 2 * kShown && i == kShown) {
      s += " -> ... (" + std::to_string(cycle.size() - 2 * kShown) + " more)";
      i = cycle.size() - kShown - 1;
      continue;
    }
    s += (i ? " -> " : "") + std::to_string(cycle[i]);
  }
  return s + " -> " + std::to_string(cycle.front());
}

}  // namespace

InputGraph InputGraph::from_children(const std::vector<std::vector<int32_t>>& children, std::string source) {
  SYLVA_CHECK(children.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), prefix(source),
              children.size(), " vertices exceed the int32 limit");
  InputGraph g;
  g.source_ = std::move(source);
  g.offsets_.reserve(children.size() + 1);
  g.offsets_.push_back(0);
  size_t total = 0;
  for (const auto& c : children) {
    total += c.size();
    SYLVA_CHECK(total < static_cast<size_t>(std::numeric_limits<int32_t>::max()), prefix(g.source_), total,
                " child slots exceed the int32 limit");
    g.offsets_.push_back(static_cast<int32_t>(total));
  }
  g.children_.reserve(total);
  for (const auto& c : children) g.children_.insert(g.children_.end(), c.begin(), c.end());
  g.validate();
  return g;
}

InputGraph InputGraph::from_parents(std::span<const int32_t> parents, std::string source) {
  SYLVA_CHECK(parents.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), prefix(source),
              parents.size(), " vertices exceed the int32 limit");
  const auto n = static_cast<int32_t>(parents.size());
  std::vector<std::vector<int32_t>> children(parents.size());
  for (int32_t v = 0; v < n; ++v) {
    const int32_t p = parents[v];
    if (p == -1) continue;
    SYLVA_CHECK(p >= 0 && p < n, prefix(source), "vertex ", v, " has parent ", p, " out of range [0, ", n,
                ") (use -1 for a root)");
    SYLVA_CHECK(p != v, prefix(source), "vertex ", v, " is its own parent");
    children[p].push_back(v);  // v increases, so each list is ordered by id
  }
  return from_children(children, std::move(source));
}

InputGraph InputGraph::chain(int32_t n, std::string source) {
  SYLVA_CHECK(n >= 0, prefix(source), "chain length must be >= 0, got ", n);
  InputGraph g;
  g.source_ = std::move(source);
  g.offsets_.resize(static_cast<size_t>(n) + 1);
  g.offsets_[0] = 0;
  for (int32_t i = 0; i < n; ++i) g.offsets_[i + 1] = i;  // vertex 0 has no slot, others one
  g.children_.resize(n > 0 ? static_cast<size_t>(n) - 1 : 0);
  for (int32_t i = 1; i < n; ++i) g.children_[i - 1] = i - 1;
  return g;
}

std::span<const int32_t> InputGraph::children(int32_t v) const {
  SYLVA_CHECK(v >= 0 && v < num_vertices(), prefix(source_), "vertex ", v, " out of range [0, ", num_vertices(),
              ")");
  return std::span<const int32_t>(children_).subspan(offsets_[v], offsets_[v + 1] - offsets_[v]);
}

int32_t InputGraph::max_arity() const {
  int32_t best = 0;
  for (int32_t v = 0; v < num_vertices(); ++v) best = std::max(best, offsets_[v + 1] - offsets_[v]);
  return best;
}

std::vector<int32_t> InputGraph::roots() const {
  std::vector<char> is_child(num_vertices(), 0);
  for (int32_t c : children_)
    if (c >= 0 && c < num_vertices()) is_child[c] = 1;
  std::vector<int32_t> out;
  for (int32_t v = 0; v < num_vertices(); ++v)
    if (!is_child[v]) out.push_back(v);
  return out;
}

void InputGraph::set_ids(const std::string& name, std::vector<int32_t> ids) {
  SYLVA_CHECK(static_cast<int64_t>(ids.size()) == num_vertices(), prefix(source_), "ids '", name, "' have ",
              ids.size(), " entries but the graph has ", num_vertices(), " vertices");
  ids_[name] = std::move(ids);
}

const std::vector<int32_t>& InputGraph::ids(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) {
    std::string have;
    for (const auto& [k, v] : ids_) have += (have.empty() ? "" : ", ") + k;
    SYLVA_THROW(prefix(source_), "no ids named '", name, "' (has: ", have.empty() ? "none" : have,
                "); attach them with set_ids");
  }
  return it->second;
}

void InputGraph::validate(int64_t max_children) const {
  const int32_t n = num_vertices();
  std::vector<int32_t> indegree(n, 0);
  for (int32_t v = 0; v < n; ++v) {
    const int32_t arity = offsets_[v + 1] - offsets_[v];
    SYLVA_CHECK(max_children < 0 || arity <= max_children, prefix(source_), "vertex ", v, " has ", arity,
                " child slots but F reads at most ", max_children, " children");
    for (int32_t s = 0; s < arity; ++s) {
      const int32_t c = children_[offsets_[v] + s];
      if (c == -1) continue;
      SYLVA_CHECK(c >= 0 && c < n, prefix(source_), "vertex ", v, " child slot ", s, " = ", c,
                  " out of range [0, ", n, ") (use -1 for an absent slot)");
      SYLVA_CHECK(c != v, prefix(source_), "vertex ", v, " child slot ", s, " is the vertex itself (self loop)");
      ++indegree[c];
    }
  }

  // Kahn's algorithm; whatever is left unprocessed lies on or below a cycle.
  std::vector<int32_t> ready;
  for (int32_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(v);
  int32_t processed = 0;
  while (!ready.empty()) {
    const int32_t v = ready.back();
    ready.pop_back();
    ++processed;
    for (int32_t i = offsets_[v]; i < offsets_[v + 1]; ++i)
      if (children_[i] >= 0 && --indegree[children_[i]] == 0) ready.push_back(children_[i]);
  }
  if (processed == n) return;

  // Every leftover vertex has a leftover parent: walking parents must revisit one.
  std::vector<int32_t> parent(n, -1);
  for (int32_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) continue;
    for (int32_t i = offsets_[v]; i < offsets_[v + 1]; ++i)
      if (children_[i] >= 0 && indegree[children_[i]] > 0) parent[children_[i]] = v;
  }
  int32_t start = 0;
  while (indegree[start] == 0) ++start;
  std::vector<int32_t> seen_at(n, -1);
  std::vector<int32_t> walk;
  int32_t v = start;
  while (true) {
    SYLVA_ASSERT(v >= 0, "cycle walk left the leftover set");
    if (seen_at[v] >= 0) break;
    seen_at[v] = static_cast<int32_t>(walk.size());
    walk.push_back(v);
    v = parent[v];
  }
  // walk follows child -> parent; reverse the loop to print parent -> child.
  std::vector<int32_t> cycle(walk.begin() + seen_at[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  SYLVA_THROW(prefix(source_), "cycle (parent -> child): ", format_cycle(cycle), "; an input graph must be a DAG");
}

}  // namespace sylva
