// Graph: a small static dataflow graph (a vertex function F, its gradient
// ∂F, or a program's static part). Nodes are appended in topological
// order, so node id order is an execution order.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "sylva/ir/op.h"

namespace sylva::ir {

struct Node {
  NodeId id = kNoNode;
  OpKind op = OpKind::Param;
  std::vector<NodeId> inputs;
  Attrs attrs;
  ValueType type;
};

enum class GraphKind : uint8_t { program, vertex_function, vertex_gradient, program_gradient };

class Graph {
 public:
  Graph(std::string name, GraphKind kind, DType dtype) : name_(std::move(name)), kind_(kind), dtype_(dtype) {}

  /// Appends a node, infers its type, and returns its id. Throws
  /// sylva::Error (tagged with the op name and graph) on a type error or
  /// when an op is not allowed in this kind of graph.
  NodeId add(OpKind op, std::vector<NodeId> inputs, Attrs attrs = {});

  const Node& node(NodeId id) const;
  /// All nodes in order. A deque, so references to nodes stay valid while
  /// more nodes are added (gradient rules hold them across emit()).
  const std::deque<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }
  const std::string& name() const { return name_; }
  GraphKind kind() const { return kind_; }
  DType dtype() const { return dtype_; }
  /// Ids of nodes with op `op`, in order.
  std::vector<NodeId> find(OpKind op) const;
  /// Largest Gather slot + 1 (0 if none); -1 if GatherReduce reads all children.
  int64_t max_children_read() const;

 private:
  std::string name_;
  GraphKind kind_;
  DType dtype_;
  std::deque<Node> nodes_;
};

/// Graphviz DOT text of a graph (nested bodies of Apply nodes as clusters).
std::string to_dot(const Graph& g);

}  // namespace sylva::ir
