// Optimisers, gradient utilities, checkpoints and the Trainer with its options.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace sylva::python {
namespace {

void bind_optimizers(nb::module_& m) {
  nb::class_<Optimizer>(m, "Optimizer", "Updates parameters from their gradients (Sgd, Adagrad, Adam).")
      .def("step", [](Optimizer& o, ParameterSet& ps) { o.step(ps); }, nb::arg("params"),
           nb::call_guard<nb::gil_scoped_release>(),
           "One update of every parameter; a non-finite gradient raises before anything changes.")
      .def_prop_rw("learning_rate", &Optimizer::learning_rate, &Optimizer::set_learning_rate)
      .def_prop_ro("steps", &Optimizer::steps)
      .def_prop_ro("name", [](const Optimizer& o) { return std::string(o.name()); })
      .def("reset", &Optimizer::reset, "Drops all per-parameter state.");
  nb::class_<Sgd, Optimizer>(m, "Sgd", "SGD with heavy-ball momentum: v = momentum·v + g; w -= lr·v.")
      .def("__init__", [](Sgd* o, double lr, double momentum) { new (o) Sgd({.lr = lr, .momentum = momentum}); },
           nb::arg("lr") = 0.01, nb::arg("momentum") = 0.0)
      .def_prop_ro("momentum", [](const Sgd& o) { return o.options().momentum; });
  nb::class_<Adagrad, Optimizer>(m, "Adagrad", "Adagrad: G += g²; w -= lr·g / (sqrt(G) + eps).")
      .def("__init__", [](Adagrad* o, double lr, double eps, double g0) {
             new (o) Adagrad({.lr = lr, .eps = eps, .initial_accumulator = g0});
           }, nb::arg("lr") = 0.01, nb::arg("eps") = 1e-10, nb::arg("initial_accumulator") = 0.0)
      .def_prop_ro("eps", [](const Adagrad& o) { return o.options().eps; });
  nb::class_<Adam, Optimizer>(m, "Adam", "Adam with bias correction.")
      .def("__init__", [](Adam* o, double lr, double b1, double b2, double eps) {
             new (o) Adam({.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps});
           }, nb::arg("lr") = 1e-3, nb::arg("beta1") = 0.9, nb::arg("beta2") = 0.999, nb::arg("eps") = 1e-8)
      .def_prop_ro("beta1", [](const Adam& o) { return o.options().beta1; })
      .def_prop_ro("beta2", [](const Adam& o) { return o.options().beta2; })
      .def_prop_ro("eps", [](const Adam& o) { return o.options().eps; });

  m.def("global_grad_norm", [](const ParameterSet& ps) { return global_grad_norm(ps); }, nb::arg("params"));
  m.def("clip_grad_norm", [](ParameterSet& ps, double n) { return clip_grad_norm(ps, n); }, nb::arg("params"),
        nb::arg("max_norm"), "Scales the gradients to a global norm of at most max_norm; returns the norm before.");
  m.def("add_weight_decay", &add_weight_decay, nb::arg("params"), nb::arg("l2"));
}

// A fresh optimiser of o's kind, options and learning rate (its state, if
// it took steps of its own, stays with o).
std::unique_ptr<Optimizer> like(const Optimizer& o) {
  std::unique_ptr<Optimizer> out;
  if (const auto* a = dynamic_cast<const Adam*>(&o)) out = std::make_unique<Adam>(a->options());
  if (const auto* a = dynamic_cast<const Adagrad*>(&o)) out = std::make_unique<Adagrad>(a->options());
  if (const auto* s = dynamic_cast<const Sgd*>(&o)) out = std::make_unique<Sgd>(s->options());
  SYLVA_CHECK(out, "[python] Trainer: unknown optimiser type '", o.name(), "'");
  out->set_learning_rate(o.learning_rate());
  return out;
}

void bind_checkpoints(nb::module_& m) {
  m.def("save_checkpoint", &save_checkpoint, nb::arg("params"), nb::arg("path"),
        nb::arg("metadata") = std::map<std::string, std::string>{}, nb::call_guard<nb::gil_scoped_release>(),
        "Writes every parameter's value as safetensors, atomically.");
  m.def("load_checkpoint", &load_checkpoint, nb::arg("params"), nb::arg("path"),
        nb::call_guard<nb::gil_scoped_release>(),
        "Reads a checkpoint into the existing parameters (names, shapes and dtype must match); returns the metadata.");
}

void bind_trainer_options(nb::module_& m) {
  nb::class_<DataParallelOptions>(m, "DataParallelOptions")
      .def(nb::init<>())
      .def_rw("deterministic", &DataParallelOptions::deterministic)
      .def_rw("groups", &DataParallelOptions::groups)
      .def_rw("bucket_bytes", &DataParallelOptions::bucket_bytes)
      .def_rw("overlap", &DataParallelOptions::overlap)
      .def_rw("fingerprint_every", &DataParallelOptions::fingerprint_every)
      .def_prop_rw(
          "device_sums",
          [](const DataParallelOptions& o) {
            using S = DataParallelOptions::DeviceSums;
            return std::string(o.device_sums == S::nccl ? "nccl" : o.device_sums == S::host ? "host" : "automatic");
          },
          [](DataParallelOptions& o, const std::string& v) {
            using S = DataParallelOptions::DeviceSums;
            SYLVA_CHECK(v == "automatic" || v == "nccl" || v == "host", "[python] device_sums '", v,
                        "' (automatic, nccl or host)");
            o.device_sums = v == "nccl" ? S::nccl : v == "host" ? S::host : S::automatic;
          },
          "With the optimiser on the device: how gradients are summed there (automatic: NCCL on CUDA).");
  nb::class_<TrainerOptions>(m, "TrainerOptions", "See sylva/train/trainer.h: each field is documented there.")
      .def(nb::init<>())
      .def_rw("executor", &TrainerOptions::executor)
      .def_rw("clip_norm", &TrainerOptions::clip_norm)
      .def_rw("weight_decay", &TrainerOptions::weight_decay)
      .def_prop_rw("normalisation",
                   [](const TrainerOptions& o) { return std::string(o.normalisation == LossScale::none ? "none" : "per_sample"); },
                   [](TrainerOptions& o, const std::string& v) {
                     SYLVA_CHECK(v == "none" || v == "per_sample", "[python] normalisation '", v,
                                 "' (per_sample or none)");
                     o.normalisation = v == "none" ? LossScale::none : LossScale::per_sample;
                   })
      .def_rw("optimizer_on_device", &TrainerOptions::optimizer_on_device)
      .def_rw("sync_parameters", &TrainerOptions::sync_parameters)
      .def_rw("parallel", &TrainerOptions::parallel)
      .def_prop_rw("communicator", [](const TrainerOptions& o) { return o.communicator; },
                   [](TrainerOptions& o, dist::Communicator* c) { o.communicator = c; },
                   nb::for_getter(nb::rv_policy::reference), nb::for_setter(nb::arg("value").none()),
                   "Data-parallel training over this communicator (None: this process alone); the trainer "
                   "keeps it alive.");

  nb::class_<StepResult>(m, "StepResult", "What one training step did.")
      .def_ro("loss", &StepResult::loss)
      .def_ro("grad_norm", &StepResult::grad_norm)
      .def_ro("samples", &StepResult::samples)
      .def_ro("vertices", &StepResult::vertices)
      .def_ro("local_samples", &StepResult::local_samples)
      .def_ro("local_vertices", &StepResult::local_vertices)
      .def_ro("imbalance", &StepResult::imbalance)
      .def_ro("comm_seconds", &StepResult::comm_seconds)
      .def_ro("comm_bytes", &StepResult::comm_bytes)
      .def_ro("sparse_bytes", &StepResult::sparse_bytes)
      .def_ro("sparse_table_bytes", &StepResult::sparse_table_bytes);
}

struct PyTrainer {
  std::unique_ptr<Trainer> t;
  PySymbol loss;
  nb::object communicator;  // TrainerOptions::communicator's Python object (or None)
};

void bind_trainer(nb::module_& m) {
  nb::class_<PyTrainer>(m, "Trainer",
                        "One optimisation step per minibatch: zero_grad, forward, backward, weight decay, clipping, "
                        "optimiser step. It runs a fresh optimiser of `optimizer`'s kind, options and learning rate "
                        "(trainer.optimizer).")
      .def("__init__", [](PyTrainer* t, const Program& p, ParameterSet& ps, const PySymbol& loss,
                          const Optimizer& opt, const TrainerOptions* o, const nb::kwargs& kw) {
             nb::object opts = nb::cast(o ? *o : TrainerOptions{});
             apply_kwargs(opts, kw, "Trainer", opts.attr("executor"));
             new (t) PyTrainer{std::make_unique<Trainer>(p, ps, loss.s, like(opt), nb::cast<TrainerOptions>(opts)),
                               loss, opts.attr("communicator")};
           }, nb::arg("program"), nb::arg("params"), nb::arg("loss"), nb::arg("optimizer"),
           nb::arg("options") = nb::none(), nb::arg("kwargs"), nb::keep_alive<1, 3>(),
           "Keyword arguments set TrainerOptions fields and, for the others, ExecutorOptions fields: "
           "Trainer(p, ps, loss, sylva.Adam(lr=1e-3), clip_norm=5.0, policy='bfs', seed=1).")
      .def("step", [](PyTrainer& t, const PyGraphBatch& b) {
             nb::gil_scoped_release unlocked;
             return t.t->step(b.batch);
           }, nb::arg("batch"), "One training step.")
      .def("evaluate", [](PyTrainer& t, const PyGraphBatch& b) {
             nb::gil_scoped_release unlocked;
             return t.t->evaluate(b.batch);
           }, nb::arg("batch"), "forward(eval); returns the loss (not normalised).")
      .def("value", [](const PyTrainer& t, const PySymbol& s) { return t.t->executor().value(s.s); },
           nb::arg("symbol"), "A program symbol's value after step() or evaluate().")
      .def_prop_ro("executor", [](nb::handle self) {
             Executor& ex = nb::cast<PyTrainer&>(self).t->executor();
             return PyExecutor{nullptr, &ex, nb::borrow(self), {}, {}};
           })
      .def_prop_ro("optimizer", [](PyTrainer& t) -> Optimizer& { return t.t->optimizer(); },
                   nb::rv_policy::reference_internal)
      .def_prop_ro("loss", [](const PyTrainer& t) { return t.loss; })
      .def_prop_ro("steps", [](const PyTrainer& t) { return t.t->steps(); })
      .def_prop_ro("optimizer_on_device", [](const PyTrainer& t) { return t.t->optimizer_on_device(); })
      .def("sync_parameters", [](PyTrainer& t) { t.t->sync_parameters(); })
      .def("parameters_changed_on_host", [](PyTrainer& t) { t.t->parameters_changed_on_host(); })
      .def("save_state", [](PyTrainer& t, const std::string& path, const std::map<std::string, std::string>& meta) {
             nb::gil_scoped_release unlocked;
             t.t->save_state(path, meta);
           }, nb::arg("path"), nb::arg("metadata") = std::map<std::string, std::string>{},
           "Parameters, optimiser state, step count and `metadata`, atomically (safetensors).")
      .def("load_state", [](PyTrainer& t, const std::string& path) {
             nb::gil_scoped_release unlocked;
             return t.t->load_state(path);
           }, nb::arg("path"), "Reads a save_state() file; returns its metadata.");
}

}  // namespace

void bind_train(nb::module_& m) {
  bind_optimizers(m);
  bind_checkpoints(m);
  bind_trainer_options(m);
  bind_trainer(m);
}

}  // namespace sylva::python
