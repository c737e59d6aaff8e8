// Plans of the program's static graph and of its gradient.
#include "sylva/plan/program_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <sstream>

#include "sylva/core/error.h"
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

// The gradient's run order: the base order (IOS's, else node order),
// re-sorted topologically with every vertex function's ApplyGrad (the long
// ops) as late as its consumers allow and everything else in base order,
// so that the gradients that do not wait for a vertex function (the
// classifier's) are final first, and a data-parallel trainer can move them
// while the vertex functions' gradients run.
std::vector<ir::NodeId> gradient_run_order(const ir::Graph& g, const PlanOptions& o) {
  const std::vector<ir::NodeId> base = run_order(g, o);
  SYLVA_ASSERT(base.size() == g.size(), "[plan] the gradient run order misses nodes");
  std::vector<size_t> position(g.size(), 0);
  for (size_t k = 0; k < base.size(); ++k) position[base[k]] = k;
  std::vector<int> missing(g.size(), 0);
  std::vector<std::vector<ir::NodeId>> consumers(g.size());
  for (const Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++missing[n.id], consumers[in].push_back(n.id);
  using Key = std::pair<bool, size_t>;  // (an ApplyGrad, base position): smallest first
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  auto push = [&](ir::NodeId id) { ready.emplace(g.node(id).op == OpKind::ApplyGrad, position[id]); };
  for (ir::NodeId id : base)
    if (missing[id] == 0) push(id);
  std::vector<ir::NodeId> order;
  order.reserve(base.size());
  while (!ready.empty()) {
    const ir::NodeId id = base[ready.top().second];
    ready.pop();
    order.push_back(id);
    for (ir::NodeId c : consumers[id])
      if (--missing[c] == 0) push(c);
  }
  SYLVA_ASSERT(order.size() == base.size(), "[plan] the program's gradient order lost nodes (a cycle?)");
  return order;
}

// One line per node of `order`, with `word(id)` after the op name where it is not null.
void order_text(std::ostringstream& os, const ir::Graph& g, const std::vector<ir::NodeId>& order,
                const std::function<const char*(size_t)>& word) {
  os << "'" << g.name() << "': " << order.size() << " nodes in run order\n";
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& n = g.node(order[k]);
    os << "  " << k << ": %" << n.id << " " << ir::op_name(n.op);
    if (const char* w = word(static_cast<size_t>(n.id))) os << " " << w;
    os << "\n";
  }
}

std::vector<std::vector<ir::NodeId>> consumers_of(const ir::Graph& g) {
  std::vector<std::vector<ir::NodeId>> c(g.size());
  for (const Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) c[in].push_back(n.id);
  return c;
}

// Whether lookup `n` of `program` is read in place by a vertex function's
// pull (ProgramPlan::pulled_in_place).
bool pulled_in_place(const ir::Graph& program, const Node& n, const std::vector<ir::NodeId>& consumers) {
  if (n.op != OpKind::Lookup || consumers.size() != 1) return false;
  const Node& apply = program.node(consumers[0]);
  return apply.op == OpKind::Apply && apply.inputs.size() == 1 && apply.inputs[0] == n.id &&
         program.node(n.inputs[0]).op == OpKind::Param && program.node(n.inputs[1]).op == OpKind::InputIds;
}

}  // namespace

std::string ProgramPlan::to_text(const ir::Graph& program) const {
  std::ostringstream os;
  order_text(os, program, order, [&](size_t id) -> const char* {
    return selected_in_place[id] ? "rows selected in place" : pulled_in_place[id] ? "pulled in place" : nullptr;
  });
  return os.str();
}

std::string ProgramGradPlan::to_text() const {
  std::ostringstream os;
  order_text(os, *graph, order, [&](size_t id) -> const char* {
    return folded[id] ? "folded" : pull_grad_in_place[id] ? "pull gradient into the table" : nullptr;
  });
  return os.str();
}

ProgramPlan plan_program(const ir::Graph& program, const PlanOptions& options) {
  ProgramPlan plan{run_order(program, options), std::vector<uint8_t>(program.size(), 0),
                   std::vector<uint8_t>(program.size(), 0)};
  const auto consumers = consumers_of(program);
  for (const Node& n : program.nodes()) {
    if (n.op == OpKind::SelectRows) {  // the executor reads the ids on the host to select rows
      const Node& ids = program.node(n.inputs[1]);
      SYLVA_CHECK(ids.op == OpKind::InputIds, "[select_rows] ids must be a program's input_ids, got node %", ids.id,
                  " (", ir::op_name(ids.op), ")");
    }
    const auto& cs = consumers[static_cast<size_t>(n.id)];
    plan.selected_in_place[static_cast<size_t>(n.id)] =
        options.direct_row_selection && n.op == OpKind::Apply && !cs.empty() &&
        std::all_of(cs.begin(), cs.end(), [&](ir::NodeId c) {
          const Node& m = program.node(c);
          return m.op == OpKind::SelectRows && m.inputs[0] == n.id && m.inputs[1] != n.id;
        });
    plan.pulled_in_place[static_cast<size_t>(n.id)] = options.pull_from_table && pulled_in_place(program, n, cs);
  }
  return plan;
}

ProgramGradPlan plan_program_gradient(const ir::Graph& program, ir::NodeId loss, const PlanOptions& options) {
  ProgramGradPlan plan;
  plan.graph = passes::differentiate_program(program, loss);
  const ir::Graph& g = *plan.graph;
  const auto consumers = consumers_of(g);
  // Parameters read inside a vertex function get dense gradients there.
  std::set<std::string> dense;
  for (const Node& n : program.nodes())
    if (n.op == OpKind::Apply)
      for (ir::NodeId id : n.attrs.body->find(OpKind::Param)) dense.insert(n.attrs.body->node(id).attrs.name);
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::ParamGradOut) continue;
    const Node& src = g.node(n.inputs[0]);
    if (src.op == OpKind::LookupGrad && consumers[src.id].size() == 1) plan.sparse_params.insert(n.attrs.name);
    else dense.insert(n.attrs.name);
  }
  for (const std::string& d : dense) plan.sparse_params.erase(d);
  const std::vector<bool> folded = passes::foldable_param_matmuls(g);
  plan.folded.assign(folded.begin(), folded.end());
  for (const Node& n : g.nodes())
    if (n.op == OpKind::ParamGradOut && plan.sparse_params.count(n.attrs.name)) plan.folded[n.inputs[0]] = 1;
  // A row selection's gradient that only a vertex function's gradient reads.
  for (const Node& n : g.nodes()) {
    const auto& cs = consumers[static_cast<size_t>(n.id)];
    if (options.direct_row_selection && n.op == OpKind::ScatterRows && cs.size() == 1 &&
        g.node(cs[0]).op == OpKind::ApplyGrad && g.node(cs[0]).inputs[0] == n.id)
      plan.folded[static_cast<size_t>(n.id)] = 1;
  }
  // A pull gradient straight into its table's gradient rows.
  plan.pull_grad_in_place.assign(g.size(), 0);
  const auto program_consumers = consumers_of(program);
  for (const Node& n : g.nodes()) {
    if (!options.pull_from_table || n.op != OpKind::ParamGradOut || !plan.sparse_params.count(n.attrs.name)) continue;
    const Node& d = g.node(g.node(n.inputs[0]).inputs[0]);  // LookupGrad(dy, ids)'s dy
    if (d.op != OpKind::ApplyGrad) continue;
    const Node& apply = program.node(d.attrs.ref);
    if (apply.inputs.empty()) continue;
    const Node& lookup = program.node(apply.inputs[0]);
    if (pulled_in_place(program, lookup, program_consumers[static_cast<size_t>(lookup.id)]) &&
        program.node(lookup.inputs[0]).attrs.name == n.attrs.name)
      plan.pull_grad_in_place[static_cast<size_t>(d.id)] = 1;
  }
  plan.order = gradient_run_order(g, options);
  // Each parameter's last writer in run order.
  std::map<std::string, size_t> last;
  for (size_t at = 0; at < plan.order.size(); ++at) {
    const Node& n = g.node(plan.order[at]);
    if (n.op == OpKind::ParamGradOut) last[n.attrs.name] = at;
    if (n.op == OpKind::ApplyGrad) {
      const ir::Graph& body = *program.node(n.attrs.ref).attrs.body;
      for (ir::NodeId id : body.find(OpKind::Param)) last[body.node(id).attrs.name] = at;
    }
  }
  plan.final_after.resize(plan.order.size());
  for (const auto& [name, at] : last) plan.final_after[at].push_back(name);
  return plan;
}

}  // namespace sylva::plan
