// InputGraph: the graph a sample brings (a tree, a chain, a DAG).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace sylva {

/// A sample's DAG with ordered children, stored CSR-style. Child slot i of
/// vertex v is what gather(i) reads at v; -1 marks an absent slot. Each
/// vertex may carry named per-vertex ids (words, labels; -1 = none).
///
/// `source` names where the sample came from ("train.txt:17", "sample 3")
/// and prefixes every validation error.
///
/// @code
/// InputGraph g = InputGraph::from_children({{}, {}, {0, 1}}, "tiny");
/// g.set_ids("labels", {-1, -1, 4});
/// @endcode
class InputGraph {
 public:
  InputGraph() = default;

  /// children[v] lists v's children in slot order. Validates (see validate()).
  static InputGraph from_children(const std::vector<std::vector<int32_t>>& children, std::string source = "");
  /// parents[v] is v's parent, -1 for a root; children ordered by vertex id.
  static InputGraph from_parents(std::span<const int32_t> parents, std::string source = "");
  /// A chain of n vertices: vertex i has child i-1 (vertex 0 has none).
  static InputGraph chain(int32_t n, std::string source = "");

  int32_t num_vertices() const { return static_cast<int32_t>(offsets_.empty() ? 0 : offsets_.size() - 1); }
  int64_t num_edges() const { return static_cast<int64_t>(children_.size()); }
  std::span<const int32_t> children(int32_t v) const;
  /// Largest number of child slots of any vertex.
  int32_t max_arity() const;
  /// Vertices that are no vertex's child.
  std::vector<int32_t> roots() const;
  const std::string& source() const { return source_; }
  void set_source(std::string s) { source_ = std::move(s); }

  /// Attaches per-vertex ids; throws if ids.size() != num_vertices().
  void set_ids(const std::string& name, std::vector<int32_t> ids);
  bool has_ids(const std::string& name) const { return ids_.count(name) != 0; }
  /// Throws sylva::Error naming the sample and the missing name.
  const std::vector<int32_t>& ids(const std::string& name) const;
  const std::map<std::string, std::vector<int32_t>>& all_ids() const { return ids_; }

  /// Throws sylva::Error (prefixed with source()) on children out of range,
  /// self-loops or cycles, and on more than max_children slots per vertex
  /// (max_children < 0: no limit).
  void validate(int64_t max_children = -1) const;

 private:
  std::vector<int32_t> offsets_;   // n + 1
  std::vector<int32_t> children_;  // CSR payload
  std::map<std::string, std::vector<int32_t>> ids_;
  std::string source_;
};

}  // namespace sylva
