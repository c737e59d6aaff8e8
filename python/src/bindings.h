// Shared pieces of the nanobind module sylva._sylva: the Symbol handle that
// keeps its graph alive, the Python-side owners of batches, executors and
// trainers, and the module's parts (one bind_* per file).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <string>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::python {

namespace nb = nanobind;

/// A Symbol with a reference to the graph it points into (a vertex
/// function's or a program's), so a symbol never outlives its graph.
struct PySymbol {
  Symbol s;
  std::shared_ptr<const void> graph;
};

/// A GraphBatch with the Python objects of its InputGraphs (the batch
/// keeps pointers to them).
struct PyGraphBatch {
  GraphBatch batch;
  std::vector<nb::object> graphs;
};

/// An Executor seen from Python: its own, or a Trainer's (`owner` then
/// holds the trainer).
struct PyExecutor {
  std::unique_ptr<Executor> owned;
  Executor* ex = nullptr;
  nb::object owner;
  nb::object batch;     // the last forward's (backward reads it)
  nb::object profiler;  // the attached one
};

/// "float32" / "float64" / "int32" (also "f32", "f64", "i32").
DType parse_dtype(const std::string& name);
/// "bfs" / "serial".
BatchingPolicy parse_policy(const std::string& name);

/// An ndarray view of `t` whose owner is `owner` (the Python object
/// holding t's storage); cast it to nb::ndarray<nb::numpy> for NumPy.
nb::ndarray<> view_of(const Tensor& t, nb::handle owner);
/// `t`'s __dlpack__(**kwargs), for the Python object `self` that holds t.
nb::object dlpack_of(const Tensor& t, nb::handle self, const nb::kwargs& kwargs);
/// Type slots giving Tensor and Parameter (its value) the buffer protocol.
PyType_Slot* tensor_buffer_slots();
PyType_Slot* parameter_buffer_slots();
/// Copies an array-like (anything with the buffer protocol or DLPack) into
/// `dst`, checking shape and dtype; `what` names dst in errors.
void copy_into(Tensor& dst, nb::handle src, const std::string& what);

/// Sets each keyword of `kwargs` on `options` (a bound options struct) as
/// an attribute; a keyword it lacks is a TypeError naming `who` and the
/// valid names. Returns the keywords it did not know when `fallback` is
/// given (set on fallback instead), else raises.
void apply_kwargs(nb::handle options, const nb::kwargs& kwargs, const char* who, nb::handle fallback = {});

void bind_core(nb::module_& m);
void bind_frontend(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_train(nb::module_& m);
void bind_dist(nb::module_& m);

}  // namespace sylva::python
