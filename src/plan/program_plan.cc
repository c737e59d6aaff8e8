// Plans of the program's static graph and of its gradient.
#include "sylva/plan/program_plan.h"

#include <numeric>
#include <sstream>

#include "sylva/passes/autodiff.h"
#include "sylva/sched/ios_ir.h"

namespace sylva::plan {

using ir::Node;
using ir::OpKind;

namespace {

std::vector<ir::NodeId> run_order(const ir::Graph& g, const PlanOptions& o) {
  if (o.ios) return ios::plan_order(g, *o.ios);
  std::vector<ir::NodeId> ids(g.size());
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

void order_text(std::ostringstream& os, const ir::Graph& g, const std::vector<ir::NodeId>& order,
                const std::vector<uint8_t>* folded) {
  os << "'" << g.name() << "': " << order.size() << " nodes in run order\n";
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& n = g.node(order[k]);
    os << "  " << k << ": %" << n.id << " " << ir::op_name(n.op);
    if (folded && (*folded)[static_cast<size_t>(n.id)]) os << " folded";
    os << "\n";
  }
}

}  // namespace

std::string ProgramPlan::to_text(const ir::Graph& program) const {
  std::ostringstream os;
  order_text(os, program, order, nullptr);
  return os.str();
}

std::string ProgramGradPlan::to_text() const {
  std::ostringstream os;
  order_text(os, *graph, order, &folded);
  return os.str();
}

ProgramPlan plan_program(const ir::Graph& program, const PlanOptions& options) {
  return {run_order(program, options)};
}

ProgramGradPlan plan_program_gradient(const ir::Graph& program, ir::NodeId loss, const PlanOptions& options) {
  ProgramGradPlan plan;
  plan.graph = passes::differentiate_program(program, loss);
  const ir::Graph& g = *plan.graph;
  std::vector<int> consumers(g.size(), 0);
  for (const Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++consumers[in];
  // Parameters read inside a vertex function get dense gradients there.
  std::set<std::string> dense;
  for (const Node& n : program.nodes())
    if (n.op == OpKind::Apply)
      for (ir::NodeId id : n.attrs.body->find(OpKind::Param)) dense.insert(n.attrs.body->node(id).attrs.name);
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::ParamGradOut) continue;
    const Node& src = g.node(n.inputs[0]);
    if (src.op == OpKind::LookupGrad && consumers[src.id] == 1) plan.sparse_params.insert(n.attrs.name);
    else dense.insert(n.attrs.name);
  }
  for (const std::string& d : dense) plan.sparse_params.erase(d);
  const std::vector<bool> folded = passes::foldable_param_matmuls(g);
  plan.folded.assign(folded.begin(), folded.end());
  for (const Node& n : g.nodes())
    if (n.op == OpKind::ParamGradOut && plan.sparse_params.count(n.attrs.name)) plan.folded[n.inputs[0]] = 1;
  plan.order = run_order(g, options);
  return plan;
}

}  // namespace sylva::plan
