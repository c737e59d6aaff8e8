#include "sylva/frontend/symbol.h"

#include "sylva/core/error.h"

namespace sylva {
namespace {

using ir::Attrs;
using ir::OpKind;

ir::Graph& graph_of(std::initializer_list<Symbol> xs, const char* op) {
  ir::Graph* g = nullptr;
  for (const Symbol& s : xs) {
    SYLVA_CHECK(s.valid(), "[", op, "] operand is an empty Symbol");
    SYLVA_CHECK(g == nullptr || g == s.graph(), "[", op, "] operands belong to different graphs ('", g->name(),
                "' and '", s.graph()->name(), "')");
    g = s.graph();
  }
  return *g;
}

Symbol unary(OpKind op, Symbol x, Attrs a = {}) {
  ir::Graph& g = graph_of({x}, std::string(ir::op_name(op)).c_str());
  return {&g, g.add(op, {x.id()}, std::move(a))};
}

Symbol binary(OpKind op, Symbol a, Symbol b, Attrs at = {}) {
  ir::Graph& g = graph_of({a, b}, std::string(ir::op_name(op)).c_str());
  return {&g, g.add(op, {a.id(), b.id()}, std::move(at))};
}

}  // namespace

Symbol apply_op(OpKind op, const std::vector<Symbol>& inputs, Attrs attrs) {
  const std::string name(ir::op_name(op));
  SYLVA_CHECK(!inputs.empty(), "[", name, "] apply_op needs an input (it names the graph)");
  ir::Graph* g = nullptr;
  std::vector<ir::NodeId> ids;
  for (const Symbol& s : inputs) {
    SYLVA_CHECK(s.valid(), "[", name, "] operand is an empty Symbol");
    SYLVA_CHECK(g == nullptr || g == s.graph(), "[", name, "] operands belong to different graphs");
    g = s.graph();
    ids.push_back(s.id());
  }
  return {g, g->add(op, std::move(ids), std::move(attrs))};
}

ir::ValueType Symbol::type() const {
  SYLVA_CHECK(valid(), "[symbol] empty Symbol has no type");
  return graph_->node(id_).type;
}

Symbol matmul(Symbol a, Symbol b, bool trans_a, bool trans_b) {
  Attrs at;
  at.trans_a = trans_a;
  at.trans_b = trans_b;
  return binary(OpKind::MatMul, a, b, at);
}

Symbol operator+(Symbol a, Symbol b) { return binary(OpKind::Add, a, b); }
Symbol operator-(Symbol a, Symbol b) { return binary(OpKind::Sub, a, b); }
Symbol operator*(Symbol a, Symbol b) { return binary(OpKind::Mul, a, b); }
Symbol operator*(double alpha, Symbol x) { return scale(x, alpha); }
Symbol tanh(Symbol x) { return unary(OpKind::Tanh, x); }
Symbol sigmoid(Symbol x) { return unary(OpKind::Sigmoid, x); }
Symbol relu(Symbol x) { return unary(OpKind::Relu, x); }
Symbol exp(Symbol x) { return unary(OpKind::Exp, x); }
Symbol log(Symbol x) { return unary(OpKind::Log, x); }

Symbol scale(Symbol x, double alpha) {
  Attrs a;
  a.alpha = alpha;
  return unary(OpKind::Scale, x, a);
}

Symbol concat(const std::vector<Symbol>& xs) {
  SYLVA_CHECK(!xs.empty(), "[concat] needs at least one input");
  std::vector<ir::NodeId> ids;
  for (const Symbol& s : xs) {
    graph_of({xs.front(), s}, "concat");
    ids.push_back(s.id());
  }
  if (xs.size() == 1) return xs.front();
  return {xs.front().graph(), xs.front().graph()->add(OpKind::Concat, std::move(ids))};
}

Symbol slice(Symbol x, int64_t begin, int64_t end) {
  Attrs a;
  a.begin = begin;
  a.end = end;
  return unary(OpKind::Slice, x, a);
}

std::vector<Symbol> split(Symbol x, int64_t n) {
  int64_t w = x.cols();
  SYLVA_CHECK(n > 0 && w % n == 0, "[split] cannot split width ", w, " into ", n, " equal parts");
  std::vector<Symbol> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(slice(x, i * (w / n), (i + 1) * (w / n)));
  return out;
}

Symbol sum(Symbol x) { return unary(OpKind::Sum, x); }
Symbol mean(Symbol x) { return unary(OpKind::Mean, x); }
Symbol sum_rows(Symbol x) { return unary(OpKind::SumRows, x); }
Symbol softmax(Symbol x) { return unary(OpKind::Softmax, x); }
Symbol log_softmax(Symbol x) { return unary(OpKind::LogSoftmax, x); }

Symbol softmax_cross_entropy(Symbol logits, Symbol labels, ir::Reduction r) {
  Attrs a;
  a.reduction = r;
  return binary(OpKind::SoftmaxCrossEntropy, logits, labels, a);
}

Symbol lookup(Symbol table, Symbol ids) { return binary(OpKind::Lookup, table, ids); }
Symbol select_rows(Symbol x, Symbol ids) { return binary(OpKind::SelectRows, x, ids); }

Symbol dropout(Symbol x, double p) {
  SYLVA_CHECK(p >= 0.0 && p < 1.0, "[dropout] probability must be in [0, 1), got ", p);
  if (p == 0.0) return x;
  Attrs a;
  a.alpha = p;
  return x * unary(OpKind::DropoutMask, x, a);
}

}  // namespace sylva
