#include "sylva/runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <numeric>
#include <set>
#include <thread>
#include <unordered_map>

#include "sylva/core/denormals.h"
#include "sylva/core/error.h"
#include "sylva/plan/program_plan.h"
#include "numerics.h"
#include "vertex_runner.h"

namespace sylva {

using detail::ValueBuffer;
using detail::VertexRunner;
using ir::Node;
using ir::NodeId;
using ir::OpKind;

struct Executor::Impl {
  Impl(const Program& p, ParameterSet& ps, ExecutorOptions o)
      : program(p),
        options((o.validate(), o)),
        backend(o.backend ? *o.backend : backend_for(o.device)),
        store(ps, backend) {
    const std::string why = precision_unsupported(o.precision, p.dtype(), backend);
    SYLVA_CHECK(why.empty(), "[executor] precision ", precision_name(o.precision), " is not available: ", why);
    if (o.threads > 0) backend.set_threads(o.threads);
    sync();
  }

  // Compiles the nodes added to the program since the last call, so symbols
  // defined after the executor was created (metrics, extra outputs) work.
  void sync() {
    const ir::Graph& g = program.graph();
    if (values.size() == g.size()) return;
    size_t first = values.size();
    for (size_t id = first; id < g.size(); ++id) values.emplace_back(backend.memory());
    runners.resize(g.size());
    selections.resize(g.size());
    ids_on_host.resize(g.size());
    pending.resize(g.size(), 0);
    for (size_t id = first; id < g.size(); ++id) {
      const Node& n = g.node(static_cast<NodeId>(id));
      if (n.op == OpKind::Param) {
        const Parameter& prm = store.host(n.attrs.name);
        SYLVA_CHECK(prm.value.shape() == n.attrs.shape, "[executor] parameter '", n.attrs.name, "' has shape ",
                    prm.value.shape().str(), " but the program was built with ", n.attrs.shape.str());
      } else if (n.op == OpKind::Apply) {
        runners[n.id] = std::make_unique<VertexRunner>(
            plans.get(n.attrs.body, plan_options()), backend, store,
            detail::RunnerOptions{options.optimisations, streaming(), options.check_numerics, options.precision});
      } else if (n.op == OpKind::SelectRows) {  // moves rows here (its ids are checked by plan_program)
      } else if (!ir::has(ir::op_def(n.op).flags, ir::OpFlag::source)) {
        SYLVA_CHECK(backend.supports(n.op), "[", backend.name(), "] no kernel for op '", ir::op_name(n.op), "'");
      }
    }
    program_plan = plan::plan_program(g, plan_options());
  }

  plan::PlanOptions plan_options() const {
    using O = Optimisation;
    return {.eager_batching = options.on(O::eager_batching), .lazy_param_grads = options.on(O::lazy_param_grads),
            .fusion = options.on(O::fusion), .ios = options.on(O::ios) ? std::optional(options.ios_options) : std::nullopt,
            .direct_row_selection = options.on(O::direct_row_selection),
            .pull_from_table = options.on(O::pull_from_table),
            .push_from_message = options.on(O::row_windows) && backend.has_row_windows()};
  }

  // Streaming on a CPU needs a core the GEMM threads leave free: with as
  // many GEMM threads as cores this process may use (taskset -c 0 leaves
  // one), a worker thread only competes with them. A device that takes
  // calls from one thread (CUDA) streams on its second lane instead.
  bool streaming() const {
    if (!options.on(Optimisation::streaming)) return false;
    if (!backend.concurrent_calls()) return backend.lanes() > 1;
    return std::max(options.threads, 1) < usable_cpu_cores();  // the GEMM threads leave a core
  }

  // Rows of the rowed inputs of `n` (they agree: check_rows), the batch's
  // vertex count when it has none.
  int64_t operand_rows(const ir::Graph& g, const Node& n, const std::vector<ValueBuffer>& buffers) const {
    for (NodeId in : n.inputs)
      if (g.node(in).type.rowed) return buffers[in].view.rows;
    return batch_rows;
  }

  // Rows of the value of `n`: a fixed value's from its shape; a rowed one
  // has one row per vertex, except a row selection (its selected rows) and
  // what is computed from one (its operands' rows).
  int64_t rows_of(const ir::Graph& g, const Node& n, const std::vector<ValueBuffer>& buffers) const {
    if (!n.type.rowed) return n.type.shape.rows();
    if (ir::has(ir::op_def(n.op).flags, ir::OpFlag::container)) return batch_rows;  // apply, apply_grad
    switch (n.op) {
      case OpKind::SelectRows: return static_cast<int64_t>(selections[n.inputs[1]].rows.size());
      case OpKind::ScatterRows: return buffers[n.inputs[1]].view.rows;  // the ids': one per vertex
      default: return operand_rows(g, n, buffers);  // input_ids too: no inputs, a row per vertex
    }
  }

  MatView& out_value(std::vector<ValueBuffer>& buffers, const ir::Graph& g, const Node& n) {
    return buffers[n.id].shape(rows_of(g, n, buffers), n.type.cols(), n.type.dtype);
  }

  // The host copy of an int32 value of the program (ids come only from
  // input_ids and their row selections), kept by forward() for checks and
  // sparse gradients.
  std::span<const int32_t> host_ids(NodeId id) const {
    const Node& n = program.graph().node(id);
    SYLVA_ASSERT(n.type.dtype == DType::i32, "ids from op ", ir::op_name(n.op), " of dtype ", dtype_name(n.type.dtype));
    return ids_on_host[static_cast<size_t>(id)];
  }

  // select_rows(x, ids): the vertices whose id is >= 0 and, for every
  // vertex, its row among them (-1 if not selected), for the gradient.
  void select_rows(const Node& n) {
    Selection& s = selections[n.inputs[1]];
    std::span<const int32_t> id = host_ids(n.inputs[1]);
    s.rows.clear();
    s.position.assign(id.size(), -1);
    for (size_t v = 0; v < id.size(); ++v)
      if (id[v] >= 0) {
        s.position[v] = static_cast<int32_t>(s.rows.size());
        s.rows.push_back(static_cast<int32_t>(v));
      }
    MatView& out = out_value(values, program.graph(), n);
    if (pending[n.inputs[0]]) {  // straight from the vertex function's rows
      row_table.clear();
      for (int32_t v : s.rows) row_table.push_back(schedule.row_of_vertex[static_cast<size_t>(v)]);
      if (!s.rows.empty()) runners[n.inputs[0]]->copy_pushed_rows(row_table, out, {});
      return;
    }
    const MatView& x = values[n.inputs[0]].view;
    SYLVA_CHECK(x.rows == batch_rows, "[select_rows] input %", n.inputs[0], " has ", x.rows,
                " rows, expected one per vertex (", batch_rows, "); rows already selected cannot be selected again");
    if (!s.rows.empty()) backend.copy_rows(x, s.rows, out, {});
    if (n.type.dtype != DType::i32) return;
    std::span<const int32_t> from = host_ids(n.inputs[0]);
    ids_on_host[n.id].clear();
    for (int32_t v : s.rows) ids_on_host[n.id].push_back(from[static_cast<size_t>(v)]);
  }

  // The value of node `id`, laid out first if it was used in place: an
  // apply's output its selections read, a lookup a pull read.
  const MatView& forward_value(NodeId id) {
    if (pending[id]) {
      pending[id] = 0;
      const Node& n = program.graph().node(id);
      if (n.op == OpKind::Apply) runners[id]->copy_pushed(out_value(values, program.graph(), n));
      else run_kernel(n, ExecContext{.gemm = options.precision});
    }
    return values[id].view;
  }

  void run_kernel(const Node& n, const ExecContext& ctx) {
    std::vector<MatView>& ins = scratch;
    ins.clear();
    for (NodeId in : n.inputs) ins.push_back(values[in].view);
    backend.run({n, ins, out_value(values, program.graph(), n), ctx});
    if (options.check_numerics) check_numerics(n, values, "forward");
  }

  // When apply `n` pulls a lookup's rows: the ids (vertex order), whose -1
  // rows are constant zeros that need no gradient. Empty otherwise.
  std::span<const int32_t> lookup_ids_of_pull(const Node& n) const {
    if (n.inputs.empty()) return {};
    const Node& pull = program.graph().node(n.inputs[0]);
    if (ir::op_def(pull.op).ids != ir::Ids::rows_of_input0) return {};  // not a lookup of rows
    return host_ids(pull.inputs[1]);
  }

  void observe(const Node& n, const ir::Graph& g, const std::vector<ValueBuffer>& buffers,
               std::chrono::steady_clock::time_point start, const Node* folded_matmul = nullptr) {
    if (!observer) return;
    const Node& op = folded_matmul ? *folded_matmul : n;
    observer({n, g, -1, rows_of(g, n, buffers), std::chrono::steady_clock::now() - start, {}, EventPhase::program,
              folded_matmul, ir::flops(g, op, operand_rows(g, op, buffers))});
  }

  // Bytes per vertex of every per-vertex value: F's and ∂F's arenas, the
  // program's rowed values and (estimated alike) their gradients.
  size_t bytes_per_vertex() const {
    size_t n = 0;
    for (const auto& r : runners)
      if (r) n += r->bytes_per_row();
    for (const Node& node : program.graph().nodes())
      if (node.type.rowed) n += 2 * static_cast<size_t>(node.type.cols()) * dtype_size(node.type.dtype);
    return n;
  }

  // ExecutorOptions::memory_budget_bytes, before anything is allocated.
  void check_memory(const GraphBatch& b) {
    if (!backend.memory().host_visible() && options.memory_budget_bytes == 0) return;
    const int64_t grow = static_cast<int64_t>(b.num_vertices()) - rows_held;
    if (grow <= 0) return;
    const size_t need = static_cast<size_t>(grow) * bytes_per_vertex();
    const size_t budget = options.memory_budget_bytes
                              ? options.memory_budget_bytes
                              : static_cast<size_t>(0.8 * static_cast<double>(available_memory_bytes()));
    if (budget > 0 && need > budget) {
      int32_t largest = 0;
      for (int32_t s = 1; s < b.num_samples(); ++s)
        if (b.sample(s).num_vertices() > b.sample(largest).num_vertices()) largest = s;
      SYLVA_THROW("[executor] a batch of ", b.num_samples(), " samples with ", b.num_vertices(),
                  " vertices needs about ", need >> 20, " MB more for its values, over the memory budget of ",
                  budget >> 20, " MB (ExecutorOptions::memory_budget_bytes; default 80% of the memory available); ",
                  "its largest sample, '", b.sample(largest).source(), "', has ", b.sample(largest).num_vertices(),
                  " vertices: use smaller batches or leave such samples out");
    }
    rows_held = b.num_vertices();
  }

  void forward(const GraphBatch& b, Mode mode) {
    forwarded = false;  // a forward that fails leaves nothing to read or go backward through
    sync();
    check_memory(b);
    batch = &b;
    batch_rows = b.num_vertices();
    const auto t0 = std::chrono::steady_clock::now();
    schedule = Schedule::build(b, options.policy);
    preprocess = std::chrono::steady_clock::now() - t0;
    ++step;
    ExecContext ctx{mode == Mode::train, options.seed, step, nullptr,
                    b.vertex_keys().empty() ? nullptr : b.vertex_keys().data(), options.precision};
    store.make_current(Side::device);  // a device: what the host changed since the last forward
    const ir::Graph& g = program.graph();
    for (NodeId id : program_plan.order) {
      const Node& n = g.node(id);
      auto start = std::chrono::steady_clock::now();
      switch (n.op) {
        case OpKind::Param: values[n.id].view = store.value(n.attrs.name); break;
        case OpKind::InputIds: {
          const std::vector<int32_t>& ids = b.ids(n.attrs.name);
          backend.upload(out_value(values, g, n).data, ids.data(), ids.size() * sizeof(int32_t));
          ids_on_host[n.id].assign(ids.begin(), ids.end());
          break;
        }
        case OpKind::Apply: {
          VertexRunner& r = *runners[n.id];
          const auto t1 = std::chrono::steady_clock::now();
          const bool table = !n.inputs.empty() && program_plan.pulled_in_place[n.inputs[0]];
          r.prepare(b, schedule,
                    build_batch_plan(r.plan(),
                                     {.batch = b, .schedule = schedule, .pull_ids = lookup_ids_of_pull(n),
                                      .pull_from_table = table,
                                      .row_windows = options.on(Optimisation::row_windows) && backend.has_row_windows(),
                                      .facts = &r.facts()},
                                     options.optimisations, r.release_batch_plan()));  // the last plan's memory
          preprocess += std::chrono::steady_clock::now() - t1;
          const NodeId source = table ? g.node(n.inputs[0]).inputs[0] : n.inputs.empty() ? ir::kNoNode : n.inputs[0];
          MatView pull = source == ir::kNoNode ? MatView{} : values[source].view;
          SYLVA_CHECK(n.inputs.empty() || table || pull.rows == batch_rows, "[apply] pull input %", n.inputs[0],
                      " has ", pull.rows, " rows, expected one per vertex (", batch_rows, ")");
          pending[n.id] = program_plan.selected_in_place[n.id];
          r.forward(pull, pending[n.id] ? MatView{} : out_value(values, g, n), ctx, observer ? &observer : nullptr);
          break;
        }
        case OpKind::SelectRows: select_rows(n); break;
        default: {
          std::vector<MatView>& ins = scratch;
          ins.clear();
          for (NodeId in : n.inputs) ins.push_back(values[in].view);
          check_rows(n, ins);
          check_ids(n, ins);
          pending[n.id] = program_plan.pulled_in_place[n.id];  // the pull reads the table
          if (!pending[n.id]) run_kernel(n, ctx);
        }
      }
      observe(n, g, values, start);
    }
    forwarded = true;
  }

  // The rowed inputs of an op have one row count: a vertex's, or a row
  // selection's (select_rows), never both.
  void check_rows(const Node& n, const std::vector<MatView>& ins) const {
    const MatView* first = nullptr;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!program.graph().node(n.inputs[k]).type.rowed) continue;
      if (!first) first = &ins[k];
      SYLVA_CHECK(ins[k].rows == first->rows, "[", ir::op_name(n.op), "] input ", k, " has ", ins[k].rows,
                  " rows but an earlier input has ", first->rows,
                  " (a select_rows result mixes only with values of the same selection)");
    }
  }

  // Ids that come straight from the batch are checked here, where the
  // offending sample and vertex can be named (kernels only know the row).
  void check_ids(const Node& n, const std::vector<MatView>& ins) const {
    const ir::Ids bound = ir::op_def(n.op).ids;
    if (bound == ir::Ids::none) return;
    const ir::Graph& g = program.graph();
    const Node* ids = &g.node(n.inputs[1]);
    const std::vector<int32_t>* vertex_of = nullptr;  // a selection's row -> vertex
    if (ids->op == OpKind::SelectRows) {
      vertex_of = &selections[ids->inputs[1]].rows;
      ids = &g.node(ids->inputs[0]);
    }
    if (ids->op != OpKind::InputIds) return;
    const int64_t limit = bound == ir::Ids::rows_of_input0 ? ins[0].rows : ins[0].cols;
    const int32_t* id = host_ids(n.inputs[1]).data();
    for (int64_t r = 0; r < ins[1].rows; ++r) {
      const int32_t v = vertex_of ? (*vertex_of)[static_cast<size_t>(r)] : static_cast<int32_t>(r);
      SYLVA_CHECK(id[r] >= -1 && id[r] < limit, "[", ir::op_name(n.op), "] ", batch->describe_vertex(v), " has ",
                  ids->attrs.name, " id ", id[r], " out of range [0, ", limit, ") (-1 means none)");
    }
  }

  // check_numerics at the program level: rows with one per vertex name it.
  void check_numerics(const Node& n, const std::vector<ValueBuffer>& buffers, const char* pass) {
    const MatView& v = buffers[n.id].view;
    const bool per_vertex = n.type.rowed && v.rows == batch_rows;
    detail::check_finite(backend, v, n, {pass, "the program", step},
                         per_vertex ? std::function<std::string(int64_t)>([&](int64_t r) {
                           return batch->describe_vertex(static_cast<int32_t>(r));
                         }) : nullptr, host_scratch);
  }

  const plan::ProgramGradPlan& grad_plan(NodeId loss) {
    auto it = grads.find(loss);
    if (it == grads.end())
      it = grads.emplace(loss, plan::plan_program_gradient(program.graph(), loss, plan_options())).first;
    return it->second;
  }

  // grad[ids[r]] += dy[r] for the rows of a lookup (unless a vertex
  // function's pull gradient went into them already); records the rows.
  void sparse_accumulate(const ir::Graph& g, const Node& lookup_grad, std::vector<ValueBuffer>& gv, Parameter& prm,
                         bool add) {
    const MatView& dy = gv[lookup_grad.inputs[0]].view;
    const MatView& ids = gv[lookup_grad.inputs[1]].view;
    const Node& ids_node = g.node(lookup_grad.inputs[1]);
    SYLVA_ASSERT(ids_node.op == OpKind::ForwardValue, "lookup_grad ids from ", ir::op_name(ids_node.op));
    const int32_t* id = host_ids(ids_node.attrs.ref).data();
    const int64_t table_rows = prm.grad.shape().rows();
    std::vector<int32_t>& rows = sparse[prm.name];
    for (int64_t r = 0; r < ids.rows; ++r) {
      SYLVA_CHECK(id[r] < table_rows, "[lookup] id ", id[r], " at row ", r, " out of range [0, ", table_rows,
                  ") of '", prm.name, "'");
      if (id[r] >= 0) rows.push_back(id[r]);
    }
    if (add) backend.add_rows(dy, {}, store.grad(prm.name), {id, static_cast<size_t>(ids.rows)});
  }

  void backward(NodeId loss, double seed) {
    SYLVA_CHECK(forwarded, "[executor] backward() called before forward()");
    const plan::ProgramGradPlan& gp = grad_plan(loss);
    const ir::Graph& g = *gp.graph;
    while (grad_values.size() < g.size()) grad_values.emplace_back(backend.memory());
    std::vector<ValueBuffer>& gv = grad_values;
    sparse.clear();
    for (const std::string& name : gp.sparse_params) sparse[name];
    for (size_t at = 0; at < gp.order.size(); ++at) {
      const Node& n = g.node(gp.order[at]);
      if (gp.folded[n.id]) continue;
      auto start = std::chrono::steady_clock::now();
      switch (n.op) {
        case OpKind::ForwardValue: gv[n.id].view = forward_value(n.attrs.ref); break;
        case OpKind::Seed: {
          MatView& s = out_value(gv, g, n);
          dispatch_floating(s.dtype, [&](auto tag) {
            const auto v = static_cast<decltype(tag)>(seed);
            backend.upload(s.data, &v, sizeof v);
          });
          break;
        }
        case OpKind::ParamGradOut:
          if (!gp.folded[n.inputs[0]]) {
            backend.accumulate(gv[n.inputs[0]].view, store.grad(n.attrs.name));
          } else if (const Node& lg = g.node(n.inputs[0]); lg.op == OpKind::LookupGrad) {
            sparse_accumulate(g, lg, gv, store.host(n.attrs.name), !gp.pull_grad_in_place[lg.inputs[0]]);
          } else {  // grad += A·B straight into the gradient
            const Node& mm = g.node(n.inputs[0]);
            scratch.clear();
            for (NodeId in : mm.inputs) scratch.push_back(gv[in].view);
            backend.run({mm, scratch, store.grad(n.attrs.name), ExecContext{.gemm = options.precision}, true});
            observe(n, g, gv, start, &mm);
            if (gradient_hook) gradient_hook(store.on_host() ? std::span<const std::string>(gp.final_after[at]) : std::span<const std::string>());
            continue;
          }
          break;
        case OpKind::ApplyGrad: {
          VertexRunner& r = *runners[n.attrs.ref];
          const Node& apply = program.graph().node(n.attrs.ref);
          const auto table = [&]() -> const std::string& {
            return program.graph().node(program.graph().node(apply.inputs[0]).inputs[0]).attrs.name;
          };
          MatView d_pull = apply.inputs.empty()             ? MatView{}
                           : gp.pull_grad_in_place[n.id] ? store.grad(table())  // rows added in place
                                                         : out_value(gv, g, n);
          const Node& d = g.node(n.inputs[0]);
          row_table.clear();
          if (gp.folded[d.id]) {  // a row selection's gradient: its rows straight into the function's rows
            const Selection& s = selections[g.node(d.inputs[1]).attrs.ref];
            for (int32_t v : schedule.vertex_of_row) row_table.push_back(s.position[static_cast<size_t>(v)]);
          }
          r.backward(gv[gp.folded[d.id] ? d.inputs[0] : d.id].view, row_table, d_pull, gp.pull_grad_in_place[n.id],
                     observer ? &observer : nullptr, gradient_tick ? &gradient_tick : nullptr);
          break;
        }
        case OpKind::ScatterRows: {  // dy's rows back at the selected vertices, zeros elsewhere
          const Selection& s = selections[g.node(n.inputs[1]).attrs.ref];
          MatView& out = out_value(gv, g, n);
          if (out.rows > 0) backend.copy_rows(gv[n.inputs[0]].view, s.position, out, {});
          break;
        }
        default: {
          scratch.clear();
          for (NodeId in : n.inputs) scratch.push_back(gv[in].view);
          backend.run({n, scratch, out_value(gv, g, n), ExecContext{.gemm = options.precision}});
          if (options.check_numerics) check_numerics(n, gv, "backward");
        }
      }
      observe(n, g, gv, start);
      if (gradient_hook) gradient_hook(store.on_host() ? std::span<const std::string>(gp.final_after[at]) : std::span<const std::string>());
    }
    for (auto& [name, rows] : sparse) sort_unique_rows(rows, store.host(name).grad.shape().rows(), row_bits);
    store.flush_grads(sparse);  // device: into the ParameterSet
  }

  const Program& program;
  ExecutorOptions options;
  Backend& backend;
  ParamStore store;
  std::vector<ValueBuffer> values;
  std::vector<ValueBuffer> grad_values;
  std::vector<std::vector<int32_t>> ids_on_host;  // per int32 node: its ids (host_ids)
  struct Selection {
    std::vector<int32_t> rows;      // the selected vertices, in order
    std::vector<int32_t> position;  // per vertex: its row in `rows`, -1 if not selected
  };
  std::vector<Selection> selections;  // per input_ids node that select_rows reads
  plan::PlanCache plans;  // one per vertex function
  std::vector<std::unique_ptr<VertexRunner>> runners;
  plan::ProgramPlan program_plan;
  std::unordered_map<NodeId, plan::ProgramGradPlan> grads;
  RowSparsity sparse;
  std::vector<uint64_t> row_bits;  // sort_unique_rows' bitmap, reused
  std::vector<MatView> scratch;  // kernel inputs, reused (no allocation per op)
  std::vector<int32_t> row_table;  // direct row selection: rows of the vertex function's rows
  std::vector<uint8_t> pending;  // per node: used in place, its value not laid out yet (forward_value)
  std::vector<char> host_scratch;  // check_numerics: a device value on the host
  const GraphBatch* batch = nullptr;
  int64_t batch_rows = 0;
  int64_t rows_held = 0;  // the most vertices a batch had: what the arenas hold
  Schedule schedule;
  std::chrono::steady_clock::duration preprocess{0};  // schedule + index tables of the last forward
  uint64_t step = 0;
  bool forwarded = false;
  Observer observer;
  Executor::GradientHook gradient_hook;
  std::function<void()> gradient_tick;  // the hook with nothing final (inside vertex functions)
};

Executor::Executor(const Program& program, ParameterSet& params, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(program, params, options)) {
  SYLVA_CHECK(params.dtype() == program.dtype(), "[executor] parameters are ", dtype_name(params.dtype()),
              " but the program is ", dtype_name(program.dtype()));
}

Executor::~Executor() = default;

namespace {

// An allocation that fails under forward() or backward() becomes a
// sylva::Error (callers see one kind of failure, with the batch's size).
template <class F>
void reporting_out_of_memory(const char* what, const GraphBatch* batch, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    SYLVA_THROW("[executor] out of memory in ", what, batch ? " of a batch of " : "",
                batch ? std::to_string(batch->num_samples()) + " samples with " +
                            std::to_string(batch->num_vertices()) + " vertices"
                      : std::string(),
                " (ExecutorOptions::memory_budget_bytes bounds what a batch may take)");
  }
}

}  // namespace

void Executor::forward(const GraphBatch& batch, Mode mode) {
  DenormalScope flush;  // see sylva/core/denormals.h
  reporting_out_of_memory("forward()", &batch, [&] { impl_->forward(batch, mode); });
}

void Executor::set_step(uint64_t step) { impl_->step = step; }

MatView Executor::device_value(Symbol s) const {
  SYLVA_CHECK(s.graph() == &impl_->program.graph(), "[executor] symbol is not from this executor's program");
  SYLVA_CHECK(impl_->forwarded, "[executor] value() called before forward()");
  SYLVA_CHECK(static_cast<size_t>(s.id()) < impl_->values.size(),
              "[executor] the symbol was added to the program after the last forward(); run forward() again");
  return impl_->forward_value(s.id());
}

Tensor Executor::value(Symbol s) const {
  const MatView v = device_value(s);
  const Node& n = impl_->program.graph().node(s.id());
  Tensor t(n.type.rowed ? Shape{v.rows, v.cols} : n.type.shape, v.dtype);
  impl_->backend.download(t.raw(), v.data, t.nbytes());
  return t;
}

double Executor::scalar(Symbol s) const {
  Tensor t = value(s);
  SYLVA_CHECK(t.numel() == 1, "[executor] scalar() of a value with ", t.numel(), " elements");
  return t.at(0);
}

void Executor::backward(Symbol loss, double seed) {
  SYLVA_CHECK(loss.graph() == &impl_->program.graph(), "[executor] loss is not a symbol of this program");
  SYLVA_CHECK(static_cast<size_t>(loss.id()) < impl_->values.size(),
              "[executor] the loss was added to the program after the last forward(); run forward() again");
  DenormalScope flush;
  reporting_out_of_memory("backward()", impl_->batch, [&] { impl_->backward(loss.id(), seed); });
}

void Executor::parameters_changed(const RowSparsity* only) { impl_->store.wrote(Side::host, only); }
ParamStore& Executor::param_store() { return impl_->store; }
Backend& Executor::backend() { return impl_->backend; }

double Executor::preprocess_seconds() const {
  return std::chrono::duration<double>(impl_->preprocess).count();
}

const Schedule& Executor::schedule() const { return impl_->schedule; }
const RowSparsity& Executor::sparse_grads() const { return impl_->sparse; }
const ExecutorOptions& Executor::options() const { return impl_->options; }
void Executor::set_policy(BatchingPolicy p) { impl_->options.policy = p; }
void Executor::set_observer(Observer obs) { impl_->observer = std::move(obs); }

void Executor::set_gradient_hook(GradientHook hook) {
  impl_->gradient_hook = std::move(hook);
  impl_->gradient_tick = nullptr;
  if (impl_->gradient_hook)
    impl_->gradient_tick = [h = &impl_->gradient_hook] { (*h)({}); };
}

const plan::ProgramGradPlan& Executor::gradient_plan(Symbol loss) {
  SYLVA_CHECK(loss.graph() == &impl_->program.graph(), "[executor] loss is not a symbol of this program");
  return impl_->grad_plan(loss.id());
}

namespace {

VertexRunner& runner_of(const Program& program, const std::vector<std::unique_ptr<VertexRunner>>& runners,
                        Symbol apply) {
  SYLVA_CHECK(apply.graph() == &program.graph() && apply.id() >= 0 &&
                  static_cast<size_t>(apply.id()) < runners.size() && runners[static_cast<size_t>(apply.id())],
              "[executor] symbol is not an apply of this program");
  return *runners[static_cast<size_t>(apply.id())];
}

}  // namespace

const ir::Graph& Executor::vertex_function(Symbol apply) const { return *vertex_plan(apply).forward.graph; }

const ir::Graph& Executor::vertex_gradient(Symbol apply) const { return *vertex_plan(apply).backward.graph; }

const plan::VertexPlan& Executor::vertex_plan(Symbol apply) const {
  return runner_of(impl_->program, impl_->runners, apply).plan();
}

const BatchPlan& Executor::batch_plan(Symbol apply) const {
  const BatchPlan* p = runner_of(impl_->program, impl_->runners, apply).batch_plan();
  SYLVA_CHECK(p, "[executor] no batch plan yet: forward() a minibatch first");
  return *p;
}

namespace {
// f summed over every buffer of the program's values, their gradients and the runners' values.
size_t sum_over_buffers(const Executor::Impl& impl, const std::function<size_t(const Buffer&)>& f) {
  size_t n = 0;
  for (const auto* buffers : {&impl.values, &impl.grad_values})
    for (const auto& s : *buffers) n += f(s.buf);
  for (const auto& r : impl.runners)
    if (r) n += r->sum_over_buffers(f);
  return n;
}
}  // namespace

size_t Executor::held_bytes() const {
  return sum_over_buffers(*impl_, [](const Buffer& b) { return b.capacity(); });
}

size_t Executor::allocations() const {
  return sum_over_buffers(*impl_, [](const Buffer& b) { return b.allocations(); }) + impl_->store.allocations();
}

}  // namespace sylva
