#include "sylva/passes/autodiff.h"

#include <unordered_map>

#include "sylva/core/error.h"

namespace sylva::passes {

using ir::Attrs;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;

namespace {

// Reverse-mode differentiation of one graph into another, implementing the
// GradContext that op gradient rules emit IR through.
class Differentiator final : public ir::GradContext {
 public:
  Differentiator(const Graph& fwd, Graph& out)
      : fwd_(fwd), out_(out), contribs_(fwd.size()), fwd_ref_(fwd.size(), ir::kNoNode), requires_(fwd.size()) {
    for (const Node& n : fwd.nodes()) requires_[n.id] = requires_grad(n);
  }

  void seed(NodeId fwd_node, NodeId grad) { contribs_[fwd_node].push_back(grad); }

  void run() {
    for (NodeId id = static_cast<NodeId>(fwd_.size()) - 1; id >= 0; --id) {
      if (contribs_[id].empty() || !requires_[id]) continue;
      node_ = &fwd_.node(id);
      dy_ = accumulate(id);
      backprop(*node_);
    }
  }

  // ---- GradContext ----
  const Node& node() const override { return *node_; }
  NodeId dy() override { return dy_; }
  NodeId input(int k) override { return forward_value(node_->inputs.at(k)); }
  NodeId output() override { return forward_value(node_->id); }
  bool needs_grad(int k) const override { return requires_[node_->inputs.at(k)]; }
  NodeId emit(OpKind op, std::vector<NodeId> inputs, Attrs attrs) override {
    return out_.add(op, std::move(inputs), std::move(attrs));
  }
  void add_grad(int k, NodeId grad) override { contribs_[node_->inputs.at(k)].push_back(grad); }
  ir::ValueType type_of(NodeId n) const override { return out_.node(n).type; }

 private:
  bool requires_grad(const Node& n) const {
    switch (n.op) {
      case OpKind::Param: case OpKind::Pull: case OpKind::Gather: case OpKind::GatherReduce: case OpKind::Apply:
        return true;
      case OpKind::InputIds: case OpKind::DropoutMask:
        return false;
      default:
        for (NodeId in : n.inputs)
          if (requires_[in]) return true;
        return false;
    }
  }

  NodeId forward_value(NodeId fwd_node) {
    if (fwd_ref_[fwd_node] == ir::kNoNode) {
      Attrs a;
      a.ref = fwd_node;
      a.declared = fwd_.node(fwd_node).type;
      fwd_ref_[fwd_node] = out_.add(OpKind::ForwardValue, {}, a);
    }
    return fwd_ref_[fwd_node];
  }

  // Sums the contributions to one node's gradient. Gradients of several
  // slices of the node become one Assemble instead of padded copies + adds.
  NodeId accumulate(NodeId id) {
    std::vector<NodeId>& c = contribs_[id];
    if (c.size() == 1) return c[0];
    std::vector<NodeId> assembles, others;
    for (NodeId g : c) (out_.node(g).op == OpKind::Assemble ? assembles : others).push_back(g);
    if (assembles.size() > 1) {
      std::vector<NodeId> inputs;
      Attrs merged;
      for (NodeId g : assembles) {
        const Node& gn = out_.node(g);
        merged.width = gn.attrs.width;
        inputs.insert(inputs.end(), gn.inputs.begin(), gn.inputs.end());
        merged.ranges.insert(merged.ranges.end(), gn.attrs.ranges.begin(), gn.attrs.ranges.end());
      }
      others.push_back(out_.add(OpKind::Assemble, inputs, merged));
    } else if (assembles.size() == 1) {
      others.push_back(assembles[0]);
    }
    NodeId acc = others[0];
    for (size_t k = 1; k < others.size(); ++k) acc = out_.add(OpKind::Add, {acc, others[k]});
    return acc;
  }

  void backprop(const Node& n) {
    const ir::OpDef& def = ir::op_def(n.op);
    if (n.op == OpKind::Apply) {
      Attrs a;
      a.body = n.attrs.body;
      a.ref = n.id;
      a.declared = n.inputs.empty() ? out_.node(dy_).type : fwd_.node(n.inputs[0]).type;
      NodeId d_pull = out_.add(def.dual, {dy_}, a);
      if (!n.inputs.empty() && requires_[n.inputs[0]]) add_grad(0, d_pull);
      return;
    }
    if (def.dual != OpKind::Count_ && ir::has(def.flags, ir::OpFlag::source)) {  // leaves through its dual
      Attrs a;
      a.name = n.attrs.name;  // a parameter's
      a.slot = n.attrs.slot;  // a gather's child slot
      out_.add(def.dual, {dy_}, a);
      return;
    }
    SYLVA_CHECK(def.grad != nullptr, "[autodiff] op '", def.name, "' (node ", n.id, " of '", fwd_.name(),
                "') has no gradient rule");
    def.grad(*this);
  }

  const Graph& fwd_;
  Graph& out_;
  std::vector<std::vector<NodeId>> contribs_;
  std::vector<NodeId> fwd_ref_;
  std::vector<bool> requires_;
  const Node* node_ = nullptr;
  NodeId dy_ = ir::kNoNode;
};

}  // namespace

std::shared_ptr<const Graph> differentiate_vertex_function(const Graph& f) {
  SYLVA_CHECK(f.kind() == ir::GraphKind::vertex_function, "[autodiff] '", f.name(), "' is not a vertex function");
  Graph out(f.name() + "_grad", ir::GraphKind::vertex_gradient, f.dtype());
  Differentiator d(f, out);
  for (const Node& n : f.nodes()) {
    if (n.op != OpKind::Push && n.op != OpKind::Scatter) continue;
    Attrs a;
    a.declared = n.type;
    NodeId seed = out.add(ir::op_def(n.op).dual, {}, a);  // PushGradIn, ScatterGradIn
    d.seed(n.inputs[0], seed);
  }
  d.run();
  return std::make_shared<const Graph>(eliminate_dead_code(out));
}

std::shared_ptr<const Graph> differentiate_program(const Graph& p, NodeId loss) {
  SYLVA_CHECK(p.kind() == ir::GraphKind::program, "[autodiff] '", p.name(), "' is not a program");
  const Node& l = p.node(loss);
  SYLVA_CHECK(!l.type.rowed && l.type.shape.numel() == 1 && is_floating(l.type.dtype),
              "[autodiff] the loss must be a fixed float scalar (e.g. sum or softmax_cross_entropy), got ",
              l.type.str());
  Graph out("program_grad", ir::GraphKind::program_gradient, p.dtype());
  Differentiator d(p, out);
  Attrs a;
  a.declared = l.type;
  d.seed(loss, out.add(OpKind::Seed, {}, a));
  d.run();
  return std::make_shared<const Graph>(eliminate_dead_code(out));
}

std::vector<bool> foldable_param_matmuls(const Graph& g) {
  std::vector<int> consumers(g.size(), 0);
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs) ++consumers[in];
  std::vector<bool> fold(g.size(), false);
  for (const Node& n : g.nodes())
    if (n.op == OpKind::ParamGradOut && g.node(n.inputs[0]).op == OpKind::MatMul && consumers[n.inputs[0]] == 1)
      fold[n.inputs[0]] = true;
  return fold;
}

Graph eliminate_dead_code(const Graph& g, std::span<const NodeId> keep) {
  std::vector<bool> live(g.size(), false);
  for (NodeId k : keep) live.at(k) = true;
  for (NodeId id = static_cast<NodeId>(g.size()) - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::side_effect) || n.op == OpKind::Scatter || n.op == OpKind::Push)
      live[id] = true;
    if (!live[id]) continue;
    for (NodeId in : n.inputs) live[in] = true;
  }
  Graph out(g.name(), g.kind(), g.dtype());
  std::vector<NodeId> remap(g.size(), ir::kNoNode);
  for (const Node& n : g.nodes()) {
    if (!live[n.id]) continue;
    std::vector<NodeId> ins;
    for (NodeId in : n.inputs) ins.push_back(remap[in]);
    remap[n.id] = out.add(n.op, std::move(ins), n.attrs);
  }
  return out;
}

}  // namespace sylva::passes
