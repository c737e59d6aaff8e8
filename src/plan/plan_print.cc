// Plans as text and Graphviz, for people reading what the runtime will do.
#include <sstream>

#include "sylva/plan/vertex_plan.h"

namespace sylva::plan {

const char* home_name(Home h) {
  switch (h) {
    case Home::arena: return "arena";
    case Home::fixed: return "fixed";
    case Home::param: return "param";
    case Home::forward: return "forward";
    case Home::scatter_grad: return "scatter_grad";
    case Home::none: return "none";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::pre: return "pre";
    case Phase::loop: return "loop";
    case Phase::post: return "post";
  }
  return "?";
}

namespace {

// Each node's fused group, or -1.
std::vector<int> group_of(const GraphPlan& p) {
  std::vector<int> g(p.graph->size(), -1);
  for (size_t k = 0; k < p.fused.size(); ++k)
    for (ir::NodeId m : p.fused[k].members) g[static_cast<size_t>(m)] = static_cast<int>(k);
  return g;
}

void text_of(std::ostringstream& os, const char* title, const GraphPlan& p) {
  const std::vector<int> group = group_of(p);
  os << title << " '" << p.graph->name() << "': " << p.graph->size() << " nodes, " << p.pre.size() << " before the loop, "
     << p.post.size() << " after it, " << p.fused.size() << " fused groups\n";
  for (const ir::Node& n : p.graph->nodes()) {
    const auto i = static_cast<size_t>(n.id);
    os << "  %" << n.id << " " << ir::op_name(n.op) << "  home=" << home_name(p.home[i])
       << " phase=" << phase_name(p.phase[i]);
    if (group[i] >= 0) os << " fused=" << group[i];
    if (p.folded[i]) os << " folded";
    if (p.window[i]) os << " window";
    if (p.in_window[i]) os << " in-window";
    if (p.task_local[i]) os << " task-local";
    os << "\n";
  }
}

void dot_of(std::ostringstream& os, const char* prefix, const GraphPlan& p) {
  const std::vector<int> group = group_of(p);
  os << "  subgraph cluster_" << prefix << " {\n    label=\"" << prefix << " " << p.graph->name() << "\";\n";
  for (size_t k = 0; k < p.fused.size(); ++k) {
    os << "    subgraph cluster_" << prefix << "_g" << k << " {\n      label=\"fused " << k
       << "\"; style=dashed;\n";
    for (ir::NodeId m : p.fused[k].members) os << "      " << prefix << m << ";\n";
    os << "    }\n";
  }
  for (const ir::Node& n : p.graph->nodes()) {
    const auto i = static_cast<size_t>(n.id);
    os << "    " << prefix << n.id << " [label=\"%" << n.id << " " << ir::op_name(n.op) << "\\n"
       << phase_name(p.phase[i]) << (p.folded[i] ? ", folded" : "") << "\"];\n";
    for (ir::NodeId in : n.inputs) os << "    " << prefix << in << " -> " << prefix << n.id << ";\n";
  }
  os << "  }\n";
}

}  // namespace

std::string VertexPlan::to_text() const {
  std::ostringstream os;
  text_of(os, "F", forward);
  text_of(os, "dF", backward);
  if (children_block.grad != ir::kNoNode)
    os << "children block: F's concat %" << children_block.concat << ", dF's gradient of it %" << children_block.grad
       << " (read in place where a batch has its children in order)\n";
  return os.str();
}

std::string VertexPlan::to_dot() const {
  std::ostringstream os;
  os << "digraph plan {\n  node [shape=box];\n";
  dot_of(os, "F", forward);
  dot_of(os, "dF", backward);
  os << "}\n";
  return os.str();
}

}  // namespace sylva::plan
