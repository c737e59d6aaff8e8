// Parameters, symbols and their ops, vertex functions and programs.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace sylva::python {
namespace {

PySymbol like(Symbol s, const PySymbol& from) { return {s, from.graph}; }

std::string symbol_repr(const PySymbol& s) {
  if (!s.s.valid()) return "sylva.Symbol(invalid)";
  return "sylva.Symbol(" + s.s.type().str() + ", node " + std::to_string(s.s.id()) + ")";
}

nb::list parameter_list(ParameterSet& ps, nb::handle self) {
  nb::list out;
  for (Parameter* p : ps.all()) out.append(nb::cast(p, nb::rv_policy::reference_internal, self));
  return out;
}

void bind_parameters(nb::module_& m) {
  nb::class_<Init>(m, "Init", "How a parameter is initialised: Init.zeros(), constant(v), uniform(lo, hi), glorot().")
      .def_static("zeros", &Init::zeros)
      .def_static("constant", &Init::constant, nb::arg("value"))
      .def_static("uniform", &Init::uniform, nb::arg("lo"), nb::arg("hi"))
      .def_static("glorot", &Init::glorot);

  nb::class_<Parameter>(m, "Parameter", nb::type_slots(parameter_buffer_slots()),
                        "A named trainable tensor and its gradient. numpy.asarray(p) (buffer protocol) and "
                        "numpy.from_dlpack(p) view its value without a copy; p.value / p.grad are sylva.Tensors "
                        "sharing the memory.")
      .def_ro("name", &Parameter::name)
      .def_prop_rw("value", [](const Parameter& p) { return p.value; },
                   [](Parameter& p, nb::handle v) { copy_into(p.value, v, "parameter '" + p.name + "'"); },
                   "The value (shares memory); assigning copies an array-like of the same shape and dtype in.")
      .def_prop_rw("grad", [](const Parameter& p) { return p.grad; },
                   [](Parameter& p, nb::handle v) { copy_into(p.grad, v, "gradient of '" + p.name + "'"); })
      .def_rw("lr_scale", &Parameter::lr_scale)
      .def_rw("decay", &Parameter::decay)
      .def_prop_ro("shape", [](const Parameter& p) { return p.value.shape().dims(); })
      .def_prop_ro("dtype", [](const Parameter& p) { return std::string(dtype_name(p.value.dtype())); })
      .def("__dlpack__", [](nb::handle self, const nb::kwargs& kw) {
             return dlpack_of(nb::cast<const Parameter&>(self).value, self, kw);
           })
      .def("__dlpack_device__", [](const Parameter&) { return nb::make_tuple(1, 0); })
      .def("__repr__", [](const Parameter& p) {
        return "sylva.Parameter('" + p.name + "', shape=" + p.value.shape().str() + ")";
      });

  nb::class_<ParameterSet>(m, "ParameterSet", "Named parameters in insertion order; all share one dtype.")
      .def("__init__", [](ParameterSet* ps, const std::string& dtype, uint64_t seed) {
             new (ps) ParameterSet(parse_dtype(dtype), seed);
           }, nb::arg("dtype") = "float32", nb::arg("seed") = 0)
      .def("add", [](ParameterSet& ps, const std::string& name, const std::vector<int64_t>& shape, Init init,
                     double lr_scale, bool decay) -> Parameter& {
             Parameter& p = ps.add(name, Shape(shape), init);
             p.lr_scale = lr_scale;
             p.decay = decay;
             return p;
           }, nb::arg("name"), nb::arg("shape"), nb::arg("init") = Init::zeros(), nb::arg("lr_scale") = 1.0,
           nb::arg("decay") = true, nb::rv_policy::reference_internal,
           "Adds and initialises a parameter (sylva.Error if the name exists).")
      .def("__getitem__", nb::overload_cast<const std::string&>(&ParameterSet::operator[]),
           nb::rv_policy::reference_internal)
      .def("__contains__", &ParameterSet::contains)
      .def("__len__", &ParameterSet::size)
      .def("__iter__", [](nb::handle self) {
             return nb::iter(parameter_list(nb::cast<ParameterSet&>(self), self));
           })
      .def("parameters", [](nb::handle self) { return parameter_list(nb::cast<ParameterSet&>(self), self); })
      .def("names", [](const ParameterSet& ps) {
             std::vector<std::string> n;
             for (const Parameter* p : ps.all()) n.push_back(p->name);
             return n;
           })
      .def_prop_ro("dtype", [](const ParameterSet& ps) { return std::string(dtype_name(ps.dtype())); })
      .def("zero_grad", [](ParameterSet& ps) { ps.zero_grad(); })
      .def("numel", &ParameterSet::numel);
}

void bind_symbol_ops(nb::module_& m) {
  m.def("matmul", [](const PySymbol& a, const PySymbol& b, bool ta, bool tb) {
          return like(matmul(a.s, b.s, ta, tb), a);
        }, nb::arg("a"), nb::arg("b"), nb::arg("trans_a") = false, nb::arg("trans_b") = false,
        "C = op(A)·op(B); also `a @ b`.");
  using Unary = Symbol (*)(Symbol);
  const std::pair<const char*, Unary> unary[] = {
      {"tanh", &tanh},       {"sigmoid", &sigmoid}, {"relu", &relu},           {"exp", &exp},
      {"log", &log},         {"sum", &sum},         {"mean", &mean},           {"sum_rows", &sum_rows},
      {"softmax", &softmax}, {"log_softmax", &log_softmax}};
  for (auto [name, fn] : unary)
    m.def(name, [fn](const PySymbol& x) { return like(fn(x.s), x); }, nb::arg("x"));
  m.def("scale", [](const PySymbol& x, double a) { return like(scale(x.s, a), x); }, nb::arg("x"), nb::arg("alpha"));
  m.def("concat", [](const std::vector<PySymbol>& xs) {
          SYLVA_CHECK(!xs.empty(), "[concat] needs at least one symbol");
          std::vector<Symbol> s;
          for (const PySymbol& x : xs) s.push_back(x.s);
          return like(concat(s), xs.front());
        }, nb::arg("xs"), "Joins columns.");
  m.def("slice", [](const PySymbol& x, int64_t b, int64_t e) { return like(slice(x.s, b, e), x); }, nb::arg("x"),
        nb::arg("begin"), nb::arg("end"), "Columns [begin, end).");
  m.def("split", [](const PySymbol& x, int64_t n) {
          std::vector<PySymbol> out;
          for (Symbol s : split(x.s, n)) out.push_back(like(s, x));
          return out;
        }, nb::arg("x"), nb::arg("n"), "n equal column blocks.");
  m.def("softmax_cross_entropy", [](const PySymbol& logits, const PySymbol& labels, const std::string& reduction) {
          SYLVA_CHECK(reduction == "sum" || reduction == "mean", "[softmax_cross_entropy] reduction '", reduction,
                      "' (sum or mean)");
          return like(softmax_cross_entropy(logits.s, labels.s,
                                            reduction == "sum" ? ir::Reduction::sum : ir::Reduction::mean),
                      logits);
        }, nb::arg("logits"), nb::arg("labels"), nb::arg("reduction") = "sum",
        "Cross-entropy of softmax(logits) against int32 labels (-1: no loss at that row).");
  m.def("lookup", [](const PySymbol& t, const PySymbol& ids) { return like(lookup(t.s, ids.s), t); },
        nb::arg("table"), nb::arg("ids"), "Rows of `table` at int32 `ids` (-1: a zero row).");
  m.def("select_rows", [](const PySymbol& x, const PySymbol& ids) { return like(select_rows(x.s, ids.s), x); },
        nb::arg("x"), nb::arg("ids"), "The rows of x whose ids are >= 0, in vertex order.");
  m.def("dropout", [](const PySymbol& x, double p) { return like(dropout(x.s, p), x); }, nb::arg("x"),
        nb::arg("p"), "Inverted dropout (identity in evaluation); masks depend on (seed, step, vertex, column).");
}

void bind_symbol(nb::module_& m) {
  nb::class_<PySymbol>(m, "Symbol", "A value of a vertex function or program under construction.")
      .def_prop_ro("valid", [](const PySymbol& s) { return s.s.valid(); })
      .def_prop_ro("cols", [](const PySymbol& s) { return s.s.cols(); })
      .def_prop_ro("shape", [](const PySymbol& s) { return s.s.type().shape.dims(); })
      .def_prop_ro("rowed", [](const PySymbol& s) { return s.s.type().rowed; }, "One row per vertex.")
      .def_prop_ro("dtype", [](const PySymbol& s) { return std::string(dtype_name(s.s.type().dtype)); })
      .def("__add__", [](const PySymbol& a, const PySymbol& b) { return like(a.s + b.s, a); })
      .def("__sub__", [](const PySymbol& a, const PySymbol& b) { return like(a.s - b.s, a); })
      .def("__mul__", [](const PySymbol& a, const PySymbol& b) { return like(a.s * b.s, a); })
      .def("__mul__", [](const PySymbol& a, double k) { return like(scale(a.s, k), a); })
      .def("__rmul__", [](const PySymbol& a, double k) { return like(scale(a.s, k), a); })
      .def("__truediv__", [](const PySymbol& a, double k) { return like(scale(a.s, 1.0 / k), a); })
      .def("__neg__", [](const PySymbol& a) { return like(scale(a.s, -1.0), a); })
      .def("__matmul__", [](const PySymbol& a, const PySymbol& b) { return like(matmul(a.s, b.s), a); })
      .def("__repr__", &symbol_repr);
  bind_symbol_ops(m);
}

PySymbol of_function(const VertexFunction& f, Symbol s) { return {s, f.shared_graph()}; }

void bind_vertex_function(nb::module_& m) {
  nb::class_<VertexFunction>(m, "VertexFunction",
                             "F: the computation at one vertex, built once as a small static dataflow graph.")
      .def("__init__", [](VertexFunction* f, const std::string& name, int64_t width, const std::string& dtype) {
             new (f) VertexFunction(name, width, parse_dtype(dtype));
           }, nb::arg("name"), nb::arg("message_width") = 0, nb::arg("dtype") = "float32")
      .def("pull", [](VertexFunction& f, int64_t w) { return of_function(f, f.pull(w)); }, nb::arg("width"),
           "This vertex's row of the external input.")
      .def("gather", [](VertexFunction& f, int64_t slot) { return of_function(f, f.gather(slot)); },
           nb::arg("slot"), "Child `slot`'s message (zeros where absent).")
      .def("gather_reduce", [](VertexFunction& f) { return of_function(f, f.gather_reduce()); },
           "Sum of all children's messages.")
      .def("scatter", [](VertexFunction& f, const PySymbol& s) { f.scatter(s.s); }, nb::arg("message"))
      .def("push", [](VertexFunction& f, const PySymbol& s) { f.push(s.s); }, nb::arg("output"))
      .def("param", [](VertexFunction& f, const Parameter& p) { return of_function(f, f.param(p)); },
           nb::arg("parameter"))
      .def_prop_ro("message_width", &VertexFunction::message_width)
      .def_prop_ro("name", [](const VertexFunction& f) { return f.graph().name(); })
      .def("to_dot", &VertexFunction::to_dot);

  nb::class_<Program>(m, "Program", "The static parts of a model joined with vertex functions.")
      .def("__init__", [](Program* p, const std::string& dtype) { new (p) Program(parse_dtype(dtype)); },
           nb::arg("dtype") = "float32")
      .def("input_ids", [](Program& p, const std::string& name) {
             return PySymbol{p.input_ids(name), std::make_shared<Program>(p)};
           }, nb::arg("name"), "Per-vertex int32 ids read from each sample's InputGraph.")
      .def("param", [](Program& p, const Parameter& w) { return PySymbol{p.param(w), std::make_shared<Program>(p)}; },
           nb::arg("parameter"))
      .def("apply", [](Program& p, const VertexFunction& f, const PySymbol* pull) {
             return PySymbol{pull ? p.apply(f, pull->s) : p.apply(f), std::make_shared<Program>(p)};
           }, nb::arg("f"), nb::arg("pull") = nb::none(),
           "Runs f at every vertex of every graph of the batch; returns the pushed rows in vertex order.")
      .def_prop_ro("dtype", [](const Program& p) { return std::string(dtype_name(p.dtype())); })
      .def("to_dot", &Program::to_dot);
}

}  // namespace

void bind_frontend(nb::module_& m) {
  bind_parameters(m);
  bind_symbol(m);
  bind_vertex_function(m);
}

}  // namespace sylva::python
