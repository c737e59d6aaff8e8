#include <algorithm>

#include "op_defs.h"

namespace sylva::ir {
namespace {

bool allowed_in(OpKind op, GraphKind kind) {
  switch (op) {
    case OpKind::Pull: case OpKind::Gather: case OpKind::GatherReduce: case OpKind::Scatter: case OpKind::Push:
      return kind == GraphKind::vertex_function;
    case OpKind::Apply: case OpKind::InputIds: case OpKind::SelectRows:
      return kind == GraphKind::program || kind == GraphKind::program_gradient;
    case OpKind::PushGradIn: case OpKind::ScatterGradIn: case OpKind::GatherGradOut:
    case OpKind::GatherReduceGradOut: case OpKind::PullGradOut:
      return kind == GraphKind::vertex_gradient;
    case OpKind::Seed: case OpKind::ApplyGrad: case OpKind::ScatterRows:
      return kind == GraphKind::program_gradient;
    case OpKind::ForwardValue: case OpKind::ParamGradOut:
      return kind == GraphKind::vertex_gradient || kind == GraphKind::program_gradient;
    default:
      return true;
  }
}

const char* kind_name(GraphKind k) {
  switch (k) {
    case GraphKind::program: return "program";
    case GraphKind::vertex_function: return "vertex function";
    case GraphKind::vertex_gradient: return "vertex-function gradient";
    case GraphKind::program_gradient: return "program gradient";
  }
  return "?";
}

}  // namespace

NodeId Graph::add(OpKind op, std::vector<NodeId> inputs, Attrs attrs) {
  const OpDef& def = op_def(op);
  SYLVA_CHECK(allowed_in(op, kind_), "[", def.name, "] not allowed in a ", kind_name(kind_), " ('", name_,
              "')");
  int n_in = static_cast<int>(inputs.size());
  SYLVA_CHECK(n_in >= def.min_inputs && (def.max_inputs < 0 || n_in <= def.max_inputs), "[", def.name,
              "] expects ", def.min_inputs, (def.max_inputs < 0 ? "+" : ""),
              (def.max_inputs > def.min_inputs ? "-" + std::to_string(def.max_inputs) : std::string()),
              " inputs, got ", n_in, " (graph '", name_, "')");
  std::vector<ValueType> types;
  types.reserve(inputs.size());
  for (NodeId in : inputs) {
    SYLVA_CHECK(in >= 0 && in < static_cast<NodeId>(nodes_.size()), "[", def.name, "] input node ", in,
                " does not belong to graph '", name_, "' (symbols from another graph?)");
    types.push_back(nodes_[in].type);
  }
  Node n;
  n.id = static_cast<NodeId>(nodes_.size());
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  try {
    n.type = def.infer(n, types);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + kind_name(kind_) + " '" + name_ + "', node " +
                std::to_string(n.id) + ")");
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

const Node& Graph::node(NodeId id) const {
  SYLVA_CHECK(id >= 0 && id < static_cast<NodeId>(nodes_.size()), "[graph] node ", id, " not in graph '", name_,
              "' of ", nodes_.size(), " nodes");
  return nodes_[id];
}

std::vector<NodeId> Graph::find(OpKind op) const {
  std::vector<NodeId> out;
  for (const Node& n : nodes_)
    if (n.op == op) out.push_back(n.id);
  return out;
}

int64_t Graph::max_children_read() const {
  int64_t m = 0;
  for (const Node& n : nodes_) {
    if (n.op == OpKind::GatherReduce) return -1;
    if (n.op == OpKind::Gather) m = std::max(m, n.attrs.slot + 1);
  }
  return m;
}

}  // namespace sylva::ir
