#include <sstream>

#include "op_defs.h"

namespace sylva::ir {
namespace {

std::string label(const Node& n) {
  std::ostringstream os;
  os << n.id << ": " << op_name(n.op);
  const Attrs& a = n.attrs;
  if (!a.name.empty()) os << " '" << a.name << "'";
  if (n.op == OpKind::Gather || n.op == OpKind::GatherGradOut) os << " slot " << a.slot;
  if (n.op == OpKind::Slice) os << " [" << a.begin << ":" << a.end << "]";
  if (n.op == OpKind::MatMul && (a.trans_a || a.trans_b)) os << (a.trans_a ? " Aᵀ" : "") << (a.trans_b ? " Bᵀ" : "");
  if (n.op == OpKind::Scale || n.op == OpKind::DropoutMask) os << " " << a.alpha;
  if (n.op == OpKind::ForwardValue) os << " of " << a.ref;
  os << "\\n" << n.type.str();
  return os.str();
}

void emit(std::ostringstream& os, const Graph& g, const std::string& prefix, int& cluster) {
  for (const Node& n : g.nodes()) {
    bool boundary = has(op_def(n.op).flags, OpFlag::boundary) || has(op_def(n.op).flags, OpFlag::source);
    os << "  " << prefix << n.id << " [label=\"" << label(n) << "\"" << (boundary ? ", shape=box" : "")
       << (has(op_def(n.op).flags, OpFlag::elementwise) ? ", style=filled, fillcolor=lightyellow" : "") << "];\n";
    for (NodeId in : n.inputs) os << "  " << prefix << in << " -> " << prefix << n.id << ";\n";
    if (n.attrs.body && n.op == OpKind::Apply) {
      std::string sub = prefix + "c" + std::to_string(cluster) + "_";
      os << "  subgraph cluster_" << cluster++ << " {\n  label=\"" << n.attrs.body->name() << "\";\n";
      emit(os, *n.attrs.body, sub, cluster);
      os << "  }\n";
    }
  }
}

}  // namespace

std::string to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph \"" << g.name() << "\" {\n  rankdir=TB;\n  node [fontsize=10];\n";
  int cluster = 0;
  emit(os, g, "n", cluster);
  os << "}\n";
  return os.str();
}

}  // namespace sylva::ir
