#include "sylva/frontend/vertex_function.h"

#include "sylva/core/error.h"

namespace sylva {

using ir::Attrs;
using ir::OpKind;

VertexFunction::VertexFunction(std::string name, int64_t message_width, DType dtype)
    : graph_(std::make_shared<ir::Graph>(std::move(name), ir::GraphKind::vertex_function, dtype)),
      message_width_(message_width) {
  SYLVA_CHECK(message_width >= 0, "[vertex_function] message width must be >= 0, got ", message_width);
  SYLVA_CHECK(is_floating(dtype), "[vertex_function] dtype must be float32 or float64");
}

Symbol VertexFunction::pull(int64_t width) {
  SYLVA_CHECK(graph_->find(OpKind::Pull).empty(), "[pull] vertex function '", graph_->name(),
              "' already pulls; concatenate inputs into one pull");
  SYLVA_CHECK(width > 0, "[pull] width must be > 0, got ", width);
  Attrs a;
  a.declared = {graph_->dtype(), true, Shape{width}};
  return {graph_.get(), graph_->add(OpKind::Pull, {}, a)};
}

Symbol VertexFunction::gather(int64_t slot) {
  SYLVA_CHECK(message_width_ > 0, "[gather] vertex function '", graph_->name(),
              "' was created with message_width 0; pass the width of scattered messages to its constructor");
  Attrs a;
  a.slot = slot;
  a.declared = {graph_->dtype(), true, Shape{message_width_}};
  return {graph_.get(), graph_->add(OpKind::Gather, {}, a)};
}

Symbol VertexFunction::gather_reduce() {
  SYLVA_CHECK(message_width_ > 0, "[gather_reduce] vertex function '", graph_->name(),
              "' was created with message_width 0");
  Attrs a;
  a.declared = {graph_->dtype(), true, Shape{message_width_}};
  return {graph_.get(), graph_->add(OpKind::GatherReduce, {}, a)};
}

void VertexFunction::scatter(Symbol message) {
  SYLVA_CHECK(message.graph() == graph_.get(), "[scatter] symbol is not from vertex function '", graph_->name(), "'");
  SYLVA_CHECK(graph_->find(OpKind::Scatter).empty(), "[scatter] vertex function '", graph_->name(),
              "' already scatters a message");
  SYLVA_CHECK(message.type().rowed && message.cols() == message_width_, "[scatter] message is ",
              message.type().str(), " but vertex function '", graph_->name(), "' declared message width ",
              message_width_);
  graph_->add(OpKind::Scatter, {message.id()});
}

void VertexFunction::push(Symbol output) {
  SYLVA_CHECK(output.graph() == graph_.get(), "[push] symbol is not from vertex function '", graph_->name(), "'");
  SYLVA_CHECK(graph_->find(OpKind::Push).empty(), "[push] vertex function '", graph_->name(), "' already pushes");
  graph_->add(OpKind::Push, {output.id()});
}

Symbol VertexFunction::param(const Parameter& p) {
  SYLVA_CHECK(p.value.dtype() == graph_->dtype(), "[param] '", p.name, "' is ", dtype_name(p.value.dtype()),
              " but vertex function '", graph_->name(), "' is ", dtype_name(graph_->dtype()));
  Attrs a;
  a.name = p.name;
  a.shape = p.value.shape();
  a.declared.dtype = graph_->dtype();
  return {graph_.get(), graph_->add(OpKind::Param, {}, a)};
}

std::string VertexFunction::to_dot() const { return ir::to_dot(*graph_); }

}  // namespace sylva
