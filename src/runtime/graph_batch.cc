#include "sylva/runtime/graph_batch.h"

#include <algorithm>

#include "sylva/core/error.h"

namespace sylva {

GraphBatch::GraphBatch(std::vector<const InputGraph*> samples) : samples_(std::move(samples)) {
  for (const InputGraph* g : samples_) {
    SYLVA_CHECK(g != nullptr, "[graph_batch] null sample");
    const int32_t base = sample_offsets_.back();
    for (int32_t v = 0; v < g->num_vertices(); ++v) {
      for (int32_t c : g->children(v)) children_.push_back(c < 0 ? -1 : base + c);
      offsets_.push_back(static_cast<int32_t>(children_.size()));
    }
    max_arity_ = std::max(max_arity_, g->max_arity());
    sample_offsets_.push_back(base + g->num_vertices());
  }
}

GraphBatch GraphBatch::of(std::span<const InputGraph> samples) {
  std::vector<const InputGraph*> ptrs;
  for (const InputGraph& g : samples) ptrs.push_back(&g);
  return GraphBatch(std::move(ptrs));
}

GraphBatch GraphBatch::subset(std::span<const int> samples) const {
  std::vector<const InputGraph*> graphs;
  std::vector<char> taken(samples_.size(), 0);
  for (int s : samples) {
    SYLVA_CHECK(s >= 0 && static_cast<size_t>(s) < samples_.size(), "[graph_batch] subset: sample ", s,
                " out of range [0, ", samples_.size(), ")");
    SYLVA_CHECK(!taken[static_cast<size_t>(s)], "[graph_batch] subset: sample ", s, " listed twice");
    taken[static_cast<size_t>(s)] = 1;
    graphs.push_back(samples_[static_cast<size_t>(s)]);
  }
  GraphBatch out(std::move(graphs));
  out.vertex_keys_.reserve(static_cast<size_t>(out.num_vertices()));
  for (int s : samples)
    for (int32_t v = sample_offsets_[static_cast<size_t>(s)]; v < sample_offsets_[static_cast<size_t>(s) + 1]; ++v)
      out.vertex_keys_.push_back(vertex_keys_.empty() ? v : vertex_keys_[static_cast<size_t>(v)]);
  return out;
}

int32_t GraphBatch::sample_of(int32_t v) const {
  SYLVA_CHECK(v >= 0 && v < num_vertices(), "[graph_batch] vertex ", v, " out of range [0, ", num_vertices(), ")");
  auto it = std::upper_bound(sample_offsets_.begin(), sample_offsets_.end(), v);
  return static_cast<int32_t>(it - sample_offsets_.begin()) - 1;
}

const std::vector<int32_t>& GraphBatch::ids(const std::string& name) const {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  std::vector<int32_t> all;
  all.reserve(static_cast<size_t>(num_vertices()));
  for (size_t s = 0; s < samples_.size(); ++s) {
    SYLVA_CHECK(samples_[s]->has_ids(name), "[input_ids] sample ", s, " (", samples_[s]->source(),
                ") has no per-vertex ids named '", name, "'; attach them with InputGraph::set_ids");
    const auto& v = samples_[s]->ids(name);
    all.insert(all.end(), v.begin(), v.end());
  }
  return ids_.emplace(name, std::move(all)).first->second;
}

std::string GraphBatch::describe_vertex(int32_t v) const {
  int32_t s = sample_of(v);
  std::string src = samples_[s]->source();
  return "sample " + std::to_string(s) + (src.empty() ? "" : " (" + src + ")") + " vertex " +
         std::to_string(v - sample_offsets_[s]);
}

}  // namespace sylva
