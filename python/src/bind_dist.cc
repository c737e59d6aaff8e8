// Data-parallel training from Python: communicators (self, Open MPI) and
// their collectives on NumPy arrays; Trainer(..., communicator=comm).
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace sylva::python {
namespace {

dist::CommOptions comm_options(double deadline_s, bool check_calls) {
  return {.deadline_s = deadline_s, .check_calls = check_calls};
}

// allreduce_sum over a writable C-contiguous float32/float64/int64 array, in place.
void allreduce(dist::Communicator& c, nb::ndarray<nb::device::cpu, nb::c_contig> a, const std::string& what) {
  const size_t n = a.size();
  if (a.dtype() == nb::dtype<float>()) {
    std::span<float> s(static_cast<float*>(a.data()), n);
    nb::gil_scoped_release unlocked;
    c.allreduce_sum(s, what);
  } else if (a.dtype() == nb::dtype<double>()) {
    std::span<double> s(static_cast<double*>(a.data()), n);
    nb::gil_scoped_release unlocked;
    c.allreduce_sum(s, what);
  } else if (a.dtype() == nb::dtype<int64_t>()) {
    std::span<int64_t> s(static_cast<int64_t*>(a.data()), n);
    nb::gil_scoped_release unlocked;
    c.allreduce_sum(s, what);
  } else {
    SYLVA_THROW("[python] allreduce_sum of '", what, "': float32, float64 or int64 arrays only");
  }
}

}  // namespace

void bind_dist(nb::module_& m) {
  nb::class_<dist::Communicator>(m, "Communicator",
                                 "One rank's view of a group of processes (docs/distributed.md). Every rank makes "
                                 "the same calls in the same order; a collective that fails raises sylva.Error on "
                                 "every rank, naming the call and the ranks.")
      .def_prop_ro("rank", &dist::Communicator::rank)
      .def_prop_ro("size", &dist::Communicator::size)
      .def_prop_ro("engine", [](const dist::Communicator& c) { return std::string(c.engine()); })
      .def_prop_ro("broken", &dist::Communicator::broken)
      .def("seconds", &dist::Communicator::seconds, "Seconds spent in collectives so far.")
      .def("bytes_sent", &dist::Communicator::bytes_sent)
      .def("allreduce_sum", &allreduce, nb::arg("array").noconvert(), nb::arg("what"),
           "Element-wise sum over ranks, in place, of a C-contiguous float32/float64/int64 array.")
      .def("barrier", [](dist::Communicator& c, const std::string& what) {
             nb::gil_scoped_release unlocked;
             c.barrier(what);
           }, nb::arg("what"));
  m.def("self_communicator", [](double d, bool check) { return dist::self_communicator(comm_options(d, check)); },
        nb::arg("deadline_s") = 60.0, nb::arg("check_calls") = true, "A group of one: this process alone.");
  m.def("mpi_communicator", [](double d, bool check) { return dist::mpi_communicator(comm_options(d, check)); },
        nb::arg("deadline_s") = 60.0, nb::arg("check_calls") = true,
        "All processes of the MPI job (start the program with mpirun); sylva.Error in a build without MPI.");
  m.def("mpi_available", &dist::mpi_available, "Whether this build has the Open MPI engine.");
  m.def("launched_by_mpi", &dist::launched_by_mpi, "Whether mpirun/mpiexec started this process.");
}

}  // namespace sylva::python
