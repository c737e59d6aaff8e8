// Input graphs, readers, vocabularies, the data-order RNG, batches, the
// Executor with its options, and the profiler.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

#include "bindings.h"

namespace sylva::python {
namespace {

// A NumPy int32 array owning a copy of `v`.
nb::ndarray<nb::numpy, int32_t> int_array(std::vector<int32_t> v) {
  auto* held = new std::vector<int32_t>(std::move(v));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<int32_t>*>(p); });
  return nb::ndarray<nb::numpy, int32_t>(held->data(), {held->size()}, owner);
}

// The int32 ids of a sequence or array (any integer dtype).
std::vector<int32_t> int_ids(nb::handle ids) {
  nb::ndarray<int32_t, nb::ndim<1>, nb::device::cpu> a;
  if (nb::try_cast(ids, a, false)) {
    std::vector<int32_t> out(a.shape(0));
    for (size_t i = 0; i < out.size(); ++i) out[i] = a(i);
    return out;
  }
  return nb::cast<std::vector<int32_t>>(ids);
}

void check_vertex(int32_t v, int32_t n, const std::string& what) {
  SYLVA_CHECK(v >= 0 && v < n, "[python] ", what, ": vertex ", v, " out of range [0, ", n, ")");
}

void bind_input_graph(nb::module_& m) {
  nb::class_<InputGraph>(m, "InputGraph", "A sample's DAG with ordered child slots and named per-vertex ids.")
      .def(nb::init<>())
      .def_static("from_children", &InputGraph::from_children, nb::arg("children"), nb::arg("source") = "",
                  "children[v] lists v's children in slot order (-1: an absent slot).")
      .def_static("from_parents", [](nb::handle parents, std::string source) {
                    return InputGraph::from_parents(int_ids(parents), std::move(source));
                  }, nb::arg("parents"), nb::arg("source") = "", "parents[v] is v's parent, -1 for a root.")
      .def_static("chain", &InputGraph::chain, nb::arg("n"), nb::arg("source") = "")
      .def_prop_ro("num_vertices", &InputGraph::num_vertices)
      .def_prop_ro("num_edges", &InputGraph::num_edges)
      .def_prop_ro("max_arity", &InputGraph::max_arity)
      .def_prop_rw("source", &InputGraph::source, &InputGraph::set_source)
      .def("__len__", &InputGraph::num_vertices)
      .def("children", [](const InputGraph& g, int32_t v) {
             check_vertex(v, g.num_vertices(), "InputGraph.children");
             std::span<const int32_t> c = g.children(v);
             return std::vector<int32_t>(c.begin(), c.end());
           }, nb::arg("v"))
      .def("roots", &InputGraph::roots)
      .def("set_ids", [](InputGraph& g, const std::string& name, nb::handle ids) { g.set_ids(name, int_ids(ids)); },
           nb::arg("name"), nb::arg("ids"), "Attaches per-vertex ids (a list or integer array, one per vertex).")
      .def("has_ids", &InputGraph::has_ids, nb::arg("name"))
      .def("ids", [](const InputGraph& g, const std::string& name) { return int_array(g.ids(name)); },
           nb::arg("name"))
      .def("id_names", [](const InputGraph& g) {
             std::vector<std::string> n;
             for (const auto& [k, v] : g.all_ids()) n.push_back(k);
             return n;
           })
      .def("validate", &InputGraph::validate, nb::arg("max_children") = -1);

  nb::class_<BracketedTree>(m, "BracketedTree", "A parsed PTB-bracketed tree: its graph (post-order) and tokens.")
      .def_rw("graph", &BracketedTree::graph)
      .def_rw("tokens", &BracketedTree::tokens);
  nb::class_<TokenChain>(m, "TokenChain").def_rw("graph", &TokenChain::graph).def_rw("tokens", &TokenChain::tokens);
  m.def("parse_bracketed_tree", &parse_bracketed_tree, nb::arg("text"), nb::arg("source") = "", nb::arg("line") = 1,
        nb::arg("num_labels") = 5);
  m.def("read_bracketed_trees", &read_bracketed_trees, nb::arg("path"), nb::arg("num_labels") = 5,
        nb::call_guard<nb::gil_scoped_release>(), "One tree per line; errors name the file and line.");
  m.def("read_token_sequences", &read_token_sequences, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>());
  m.def("read_parent_arrays", &read_parent_arrays, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>());
}

void bind_vocabulary(nb::module_& m) {
  nb::class_<Vocabulary>(m, "Vocabulary", "Tokens to dense ids in insertion order, with an optional unknown token.")
      .def(nb::init<>())
      .def("add", [](Vocabulary& v, const std::string& t) { return v.add(t); }, nb::arg("token"))
      .def("id", [](const Vocabulary& v, const std::string& t) { return v.id(t); }, nb::arg("token"))
      .def("__contains__", [](const Vocabulary& v, const std::string& t) { return v.contains(t); })
      .def("token", &Vocabulary::token, nb::arg("id"))
      .def("__len__", &Vocabulary::size)
      .def("set_unknown", [](Vocabulary& v, const std::string& t) { v.set_unknown(t); }, nb::arg("token"))
      .def_prop_ro("unknown_id", &Vocabulary::unknown_id)
      .def("add_all", [](Vocabulary& v, const std::vector<std::string>& ts) {
             std::vector<int32_t> ids;
             for (const std::string& t : ts) ids.push_back(t.empty() ? -1 : v.add(t));
             return int_array(std::move(ids));
           }, nb::arg("tokens"), "add() of every token; an empty token (an internal tree node) gives -1.")
      .def("ids", [](const Vocabulary& v, const std::vector<std::string>& ts) {
             std::vector<int32_t> ids;
             for (const std::string& t : ts) ids.push_back(t.empty() ? -1 : v.id(t));
             return int_array(std::move(ids));
           }, nb::arg("tokens"), "id() of every token; an empty token gives -1.");
}

// The data-order RNG of the C++ examples (std::mt19937_64 with std::shuffle),
// so a Python program shuffles exactly as they do for the same seed.
struct Rng {
  std::mt19937_64 engine;
};

void bind_rng(nb::module_& m) {
  nb::class_<Rng>(m, "Rng", "std::mt19937_64: shuffles as the C++ examples do for the same seed.")
      .def("__init__", [](Rng* r, uint64_t seed) { new (r) Rng{std::mt19937_64(seed)}; }, nb::arg("seed"))
      .def("permutation", [](Rng& r, size_t n) {
             std::vector<size_t> order(n);
             std::iota(order.begin(), order.end(), size_t{0});
             std::shuffle(order.begin(), order.end(), r.engine);
             return order;
           }, nb::arg("n"), "0..n-1 shuffled by std::shuffle.")
      .def("next", [](Rng& r) { return r.engine(); })
      .def("state", [](const Rng& r) {
             std::ostringstream os;
             os << r.engine;
             return os.str();
           })
      .def("set_state", [](Rng& r, const std::string& s) {
             std::istringstream is(s);
             is >> r.engine;
             SYLVA_CHECK(!is.fail(), "[python] Rng.set_state: not the state of a mt19937_64");
           }, nb::arg("state"));
}

void bind_batch(nb::module_& m) {
  nb::class_<PyGraphBatch>(m, "GraphBatch", "The samples of a minibatch as one graph (it keeps its graphs alive).")
      .def("__init__", [](PyGraphBatch* b, const nb::sequence& graphs) {
             std::vector<const InputGraph*> ptrs;
             std::vector<nb::object> held;
             for (nb::handle g : graphs) {
               ptrs.push_back(&nb::cast<const InputGraph&>(g));
               held.push_back(nb::borrow(g));
             }
             new (b) PyGraphBatch{GraphBatch(std::move(ptrs)), std::move(held)};
           }, nb::arg("graphs"))
      .def_prop_ro("num_samples", [](const PyGraphBatch& b) { return b.batch.num_samples(); })
      .def_prop_ro("num_vertices", [](const PyGraphBatch& b) { return b.batch.num_vertices(); })
      .def_prop_ro("max_arity", [](const PyGraphBatch& b) { return b.batch.max_arity(); })
      .def("__len__", [](const PyGraphBatch& b) { return b.batch.num_samples(); })
      .def("sample_offsets", [](const PyGraphBatch& b) {
             std::vector<int32_t> o;
             for (int32_t s = 0; s <= b.batch.num_samples(); ++s) o.push_back(b.batch.sample_offset(s));
             return int_array(std::move(o));
           }, "Where each sample's vertices start in vertex order, and the total at the end.")
      .def("sample_of", [](const PyGraphBatch& b, int32_t v) {
             check_vertex(v, b.batch.num_vertices(), "GraphBatch.sample_of");
             return b.batch.sample_of(v);
           }, nb::arg("v"))
      .def("children", [](const PyGraphBatch& b, int32_t v) {
             check_vertex(v, b.batch.num_vertices(), "GraphBatch.children");
             std::span<const int32_t> c = b.batch.children(v);
             return std::vector<int32_t>(c.begin(), c.end());
           }, nb::arg("v"))
      .def("ids", [](const PyGraphBatch& b, const std::string& name) { return int_array(b.batch.ids(name)); },
           nb::arg("name"), "Per-vertex ids of all samples in vertex order.")
      .def("describe_vertex", [](const PyGraphBatch& b, int32_t v) { return b.batch.describe_vertex(v); });
}

void bind_executor_options(nb::module_& m) {
  nb::class_<ios::Options>(m, "IosOptions", "The IOS scheduler's variant and pruning (r, s).")
      .def(nb::init<>())
      .def_prop_rw("variant", [](const ios::Options& o) { return std::string(ios::variant_name(o.variant)); },
                   [](ios::Options& o, const std::string& v) {
                     for (ios::Variant x : {ios::Variant::sequential, ios::Variant::greedy, ios::Variant::merge,
                                            ios::Variant::parallel, ios::Variant::both})
                       if (v == ios::variant_name(x)) {
                         o.variant = x;
                         return;
                       }
                     SYLVA_THROW("[python] unknown IOS variant '", v, "' (sequential, greedy, ios-merge, ios-parallel, ios-both)");
                   })
      .def_rw("r", &ios::Options::r)
      .def_rw("s", &ios::Options::s);
  auto options = nb::class_<ExecutorOptions>(m, "ExecutorOptions",
                                             "See sylva/runtime/options.h: each field and optimisation is documented "
                                             "there. One boolean property per optimisation (sylva.optimisations()); "
                                             "setting one False also turns off what needs it.")
      .def("__init__", [](ExecutorOptions* o, const nb::kwargs& kw) {
             nb::object tmp = nb::cast(ExecutorOptions{});
             apply_kwargs(tmp, kw, "ExecutorOptions");
             new (o) ExecutorOptions(nb::cast<ExecutorOptions>(tmp));
           }, "Keyword arguments set the fields: ExecutorOptions(policy='serial', seed=3, fusion=False).")
      .def_static("reference", &ExecutorOptions::reference, "Every optimisation off: the correctness oracle.")
      .def("validate", &ExecutorOptions::validate, "Raises naming every conflict (an optimisation without one it needs).")
      .def("to_text", &ExecutorOptions::to_text)
      .def("__repr__", &ExecutorOptions::to_text)
      .def_prop_rw("policy", [](const ExecutorOptions& o) { return std::string(o.policy == BatchingPolicy::Bfs ? "bfs" : "serial"); },
                   [](ExecutorOptions& o, const std::string& p) { o.policy = parse_policy(p); })
      .def_rw("device", &ExecutorOptions::device)
      .def_rw("seed", &ExecutorOptions::seed)
      .def_rw("threads", &ExecutorOptions::threads)
      .def_rw("ios_options", &ExecutorOptions::ios_options)
      .def_prop_rw("precision", [](const ExecutorOptions& o) { return std::string(precision_name(o.precision)); },
                   [](ExecutorOptions& o, const std::string& p) { o.precision = precision_named(p); },
                   "'fp32' or 'bf16': the precision of GEMMs (bf16: bfloat16 operands, float32 accumulation and "
                   "master weights; needs AVX512_BF16)")
      .def_rw("check_numerics", &ExecutorOptions::check_numerics)
      .def_rw("memory_budget_bytes", &ExecutorOptions::memory_budget_bytes);
  // The optimisations' keywords, generated from the one table: True puts
  // one on (validate() then checks what it needs), False takes it off with
  // what needs it.
  for (const OptimisationInfo& i : optimisation_table()) {
    const Optimisation id = i.id;
    options.def_prop_rw(
        i.name.data(), [id](const ExecutorOptions& o) { return o.on(id); },
        [id](ExecutorOptions& o, bool on) {
          if (on)
            o.optimisations = o.optimisations.with({id});
          else
            o = o.without(id);
        },
        i.help.data());
  }
  m.def("optimisations", [] {
    std::vector<nb::dict> rows;
    for (const OptimisationInfo& i : optimisation_table()) {
      nb::dict d;
      d["name"] = std::string(i.name);
      d["flag"] = std::string(i.flag);
      d["group"] = std::string(i.group);
      std::vector<std::string> needs;
      for (const OptimisationInfo& j : optimisation_table())
        if (i.needs.has(j.id)) needs.emplace_back(j.name);
      d["needs"] = needs;
      d["help"] = std::string(i.help);
      rows.push_back(d);
    }
    return rows;
  }, "The executor's optimisations: name (the ExecutorOptions keyword), flag (the examples' --no-* flag), group, "
     "needs and help, from the one table in sylva/runtime/options.h.");
}

Mode parse_mode(const std::string& m) {
  if (m == "train") return Mode::train;
  if (m == "eval") return Mode::eval;
  SYLVA_THROW("[python] unknown mode '", m, "' (train or eval)");
}

void bind_executor(nb::module_& m) {
  nb::class_<PyExecutor>(m, "Executor", "Runs a Program forward and backward over minibatches.")
      .def("__init__", [](PyExecutor* e, const Program& p, ParameterSet& ps, const ExecutorOptions* o,
                          const nb::kwargs& kw) {
             nb::object opts = nb::cast(o ? *o : ExecutorOptions{});
             apply_kwargs(opts, kw, "Executor");
             auto owned = std::make_unique<Executor>(p, ps, nb::cast<ExecutorOptions>(opts));
             Executor* ex = owned.get();
             new (e) PyExecutor{std::move(owned), ex, {}, {}, {}};
           }, nb::arg("program"), nb::arg("params"), nb::arg("options") = nb::none(), nb::arg("kwargs"),
           nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>(),
           "Keyword arguments set ExecutorOptions fields: Executor(p, ps, policy='bfs', seed=1, threads=1).")
      .def("forward", [](PyExecutor& e, nb::object batch, const std::string& mode) {
             const GraphBatch& b = nb::cast<const PyGraphBatch&>(batch).batch;
             const Mode md = parse_mode(mode);
             e.batch = batch;
             nb::gil_scoped_release unlocked;
             e.ex->forward(b, md);
           }, nb::arg("batch"), nb::arg("mode") = "train")
      .def("backward", [](PyExecutor& e, const PySymbol& loss, double seed) {
             nb::gil_scoped_release unlocked;
             e.ex->backward(loss.s, seed);
           }, nb::arg("loss"), nb::arg("seed") = 1.0)
      .def("value", [](const PyExecutor& e, const PySymbol& s) { return e.ex->value(s.s); }, nb::arg("symbol"),
           "A copy of a program symbol's value after forward().")
      .def("scalar", [](const PyExecutor& e, const PySymbol& s) { return e.ex->scalar(s.s); }, nb::arg("symbol"))
      .def("set_step", [](PyExecutor& e, uint64_t k) { e.ex->set_step(k); }, nb::arg("step"))
      .def("set_policy", [](PyExecutor& e, const std::string& p) { e.ex->set_policy(parse_policy(p)); })
      .def("preprocess_seconds", [](const PyExecutor& e) { return e.ex->preprocess_seconds(); })
      .def("held_bytes", [](const PyExecutor& e) { return e.ex->held_bytes(); },
           "Bytes the values, arenas and value gradients hold now (parameters and optimiser state not included).")
      .def("sparse_grads", [](const PyExecutor& e) { return e.ex->sparse_grads(); })
      .def("allocations", [](const PyExecutor& e) { return e.ex->allocations(); })
      .def_prop_ro("options", [](const PyExecutor& e) { return e.ex->options(); })
      .def("vertex_plan", [](const PyExecutor& e, const PySymbol& apply) { return e.ex->vertex_plan(apply.s).to_text(); },
           nb::arg("apply"), "The plan of an apply's vertex function (F, ∂F, phases, fused groups) as text.")
      .def("batch_plan", [](const PyExecutor& e, const PySymbol& apply) { return e.ex->batch_plan(apply.s).to_text(); },
           nb::arg("apply"),
           "The plan of the last minibatch for an apply (row tables, what each task lacks, message writes, "
           "children blocks) as text; sylva.Error before the first forward.")
      .def("set_profiler", [](PyExecutor& e, nb::object prof) {
             e.ex->set_observer(prof.is_none() ? Observer{} : nb::cast<Profiler&>(prof).observer());
             e.profiler = prof;
           }, nb::arg("profiler").none(), "Times every op into a sylva.Profiler (None: stop).");
}

void bind_profiler(nb::module_& m) {
  nb::class_<Profiler>(m, "Profiler", "Where the time of training steps goes, by op category.")
      .def(nb::init<>())
      .def("add_wall_time", &Profiler::add_wall_time, nb::arg("seconds"))
      .def("reset", &Profiler::reset)
      .def("report", &Profiler::report, nb::arg("top_ops") = 8)
      .def("wall_seconds", &Profiler::wall_seconds)
      .def("op_seconds", &Profiler::op_seconds)
      .def("task_loop_seconds", &Profiler::task_loop_seconds)
      .def("outside_seconds", &Profiler::outside_seconds);
}

}  // namespace

void bind_runtime(nb::module_& m) {
  bind_input_graph(m);
  bind_vocabulary(m);
  bind_rng(m);
  bind_batch(m);
  bind_executor_options(m);
  bind_executor(m);
  bind_profiler(m);
}

}  // namespace sylva::python
