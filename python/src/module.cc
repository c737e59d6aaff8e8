// sylva._sylva: the nanobind module behind the `sylva` Python package.
#include "bindings.h"

NB_MODULE(_sylva, m) {
  m.doc() =
      "Sylva: training dynamic neural networks (Tree-LSTMs, variable-length LSTMs, DAG models) fast. "
      "Write the computation of one vertex once (VertexFunction); each sample brings its own graph "
      "(InputGraph); the Executor batches the vertices of a minibatch by breadth-first search.";
  sylva::python::bind_core(m);
  sylva::python::bind_frontend(m);
  sylva::python::bind_runtime(m);
  sylva::python::bind_dist(m);  // before the trainer, whose options name a Communicator
  sylva::python::bind_train(m);
}
