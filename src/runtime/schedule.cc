#include "sylva/runtime/schedule.h"

#include <sstream>

#include "sylva/core/error.h"

namespace sylva {
namespace {

// Parents in CSR form (one entry per child slot occurrence) and the number
// of pending children of every vertex.
struct Dependents {
  std::vector<int32_t> offsets, parents, pending;
};

Dependents dependents(const GraphBatch& b) {
  const int32_t n = b.num_vertices();
  Dependents d;
  d.offsets.assign(static_cast<size_t>(n) + 1, 0);
  d.pending.assign(static_cast<size_t>(n), 0);
  for (int32_t v = 0; v < n; ++v)
    for (int32_t c : b.children(v))
      if (c >= 0) {
        SYLVA_CHECK(c < n, "[schedule] ", b.describe_vertex(v), " has child ", c, " out of range");
        ++d.offsets[c + 1];
        ++d.pending[v];
      }
  for (int32_t v = 0; v < n; ++v) d.offsets[v + 1] += d.offsets[v];
  d.parents.resize(static_cast<size_t>(d.offsets[n]));
  std::vector<int32_t> fill(d.offsets.begin(), d.offsets.end() - 1);
  for (int32_t v = 0; v < n; ++v)
    for (int32_t c : b.children(v))
      if (c >= 0) d.parents[fill[c]++] = v;
  return d;
}

// Frontier rounds of Kahn's algorithm over vertices [begin, end): round t
// holds the vertices whose children all lie in rounds < t.
void frontier_rounds(const GraphBatch& b, Dependents& d, int32_t begin, int32_t end,
                     std::vector<std::vector<int32_t>>& rounds) {
  std::vector<int32_t> frontier;
  for (int32_t v = begin; v < end; ++v)
    if (d.pending[v] == 0) frontier.push_back(v);
  int64_t seen = 0;
  while (!frontier.empty()) {
    seen += static_cast<int64_t>(frontier.size());
    std::vector<int32_t> next;
    for (int32_t v : frontier)
      for (int32_t k = d.offsets[v]; k < d.offsets[v + 1]; ++k)
        if (--d.pending[d.parents[k]] == 0) next.push_back(d.parents[k]);
    rounds.push_back(std::move(frontier));
    frontier = std::move(next);
  }
  if (seen != end - begin) {
    for (int32_t v = begin; v < end; ++v)
      SYLVA_CHECK(d.pending[v] == 0, "[schedule] cycle through ", b.describe_vertex(v),
                  ": a graph must be acyclic");
  }
}

}  // namespace

const char* policy_name(BatchingPolicy p) { return p == BatchingPolicy::Serial ? "serial" : "bfs"; }

BatchingPolicy parse_policy(const std::string& name) {
  if (name == "serial") return BatchingPolicy::Serial;
  if (name == "bfs") return BatchingPolicy::Bfs;
  SYLVA_THROW("[policy] unknown batching policy '", name, "' (expected serial or bfs)");
}

Schedule Schedule::build(const GraphBatch& b, BatchingPolicy policy) {
  Schedule s;
  s.policy = policy;
  Dependents d = dependents(b);
  std::vector<std::vector<int32_t>> rounds;
  if (policy == BatchingPolicy::Bfs) {
    frontier_rounds(b, d, 0, b.num_vertices(), rounds);
  } else {
    // Vertices only depend on vertices of their own sample, so per-sample
    // rounds are a valid order; each vertex becomes its own task.
    for (int32_t smp = 0; smp < b.num_samples(); ++smp) {
      std::vector<std::vector<int32_t>> local;
      frontier_rounds(b, d, b.sample_offset(smp), b.sample_offset(smp + 1), local);
      for (auto& r : local)
        for (int32_t v : r) rounds.push_back({v});
    }
  }
  s.row_of_vertex.assign(static_cast<size_t>(b.num_vertices()), -1);
  for (auto& r : rounds) {
    s.tasks.push_back({static_cast<int64_t>(s.vertex_of_row.size()), static_cast<int64_t>(r.size())});
    for (int32_t v : r) {
      s.row_of_vertex[v] = static_cast<int32_t>(s.vertex_of_row.size());
      s.vertex_of_row.push_back(v);
    }
  }
  SYLVA_ASSERT(s.num_rows() == b.num_vertices());
  return s;
}

std::string Schedule::to_dot(const GraphBatch& b) const {
  std::ostringstream os;
  os << "digraph schedule {\n  rankdir=BT;\n  node [shape=circle, fontsize=9];\n";
  for (size_t t = 0; t < tasks.size(); ++t) {
    os << "  subgraph cluster_t" << t << " {\n    label=\"task " << t << " (bs " << tasks[t].bs << ")\";\n";
    for (int64_t r = tasks[t].offset; r < tasks[t].offset + tasks[t].bs; ++r) os << "    v" << vertex_of_row[r] << ";\n";
    os << "  }\n";
  }
  for (int32_t v = 0; v < b.num_vertices(); ++v)
    for (int32_t c : b.children(v))
      if (c >= 0) os << "  v" << c << " -> v" << v << ";\n";
  os << "}\n";
  return os.str();
}

}  // namespace sylva
