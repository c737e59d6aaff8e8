#include "sylva/frontend/program.h"

#include "sylva/core/error.h"

namespace sylva {

using ir::Attrs;
using ir::OpKind;

Program::Program(DType dtype) : graph_(std::make_shared<ir::Graph>("program", ir::GraphKind::program, dtype)) {
  SYLVA_CHECK(is_floating(dtype), "[program] dtype must be float32 or float64");
}

Symbol Program::input_ids(const std::string& name) {
  for (ir::NodeId id : graph_->find(OpKind::InputIds))
    if (graph_->node(id).attrs.name == name) return {graph_.get(), id};
  Attrs a;
  a.name = name;
  return {graph_.get(), graph_->add(OpKind::InputIds, {}, a)};
}

Symbol Program::param(const Parameter& p) {
  for (ir::NodeId id : graph_->find(OpKind::Param))
    if (graph_->node(id).attrs.name == p.name) return {graph_.get(), id};
  SYLVA_CHECK(p.value.dtype() == graph_->dtype(), "[param] '", p.name, "' is ", dtype_name(p.value.dtype()),
              " but the program is ", dtype_name(graph_->dtype()));
  Attrs a;
  a.name = p.name;
  a.shape = p.value.shape();
  a.declared.dtype = graph_->dtype();
  return {graph_.get(), graph_->add(OpKind::Param, {}, a)};
}

Symbol Program::apply(const VertexFunction& f, Symbol pull) {
  SYLVA_CHECK(pull.graph() == graph_.get(), "[apply] pull input is not a symbol of this program");
  SYLVA_CHECK(f.graph().dtype() == graph_->dtype(), "[apply] vertex function '", f.graph().name(), "' is ",
              dtype_name(f.graph().dtype()), " but the program is ", dtype_name(graph_->dtype()));
  Attrs a;
  a.body = f.shared_graph();
  return {graph_.get(), graph_->add(OpKind::Apply, {pull.id()}, a)};
}

Symbol Program::apply(const VertexFunction& f) {
  SYLVA_CHECK(f.graph().dtype() == graph_->dtype(), "[apply] vertex function dtype differs from the program's");
  Attrs a;
  a.body = f.shared_graph();
  return {graph_.get(), graph_->add(OpKind::Apply, {}, a)};
}

std::string Program::to_dot() const { return ir::to_dot(*graph_); }

}  // namespace sylva
