// Faults under mpirun, one scenario per run (tests/CMakeLists.txt checks
// that the job ends non-zero, in time, naming what went wrong):
//   stall     rank 1 calls 4 s late; the others' deadline is 1 s
//   die       rank 1 is killed (SIGKILL) between two collectives
//   mismatch  rank 1 trains with another bucket layout
//   diverge   rank 1's parameters differ from the others' before training
// Each rank that catches a sylva::Error prints "rank R: <message>" and exits 3.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "models.h"

namespace {

using namespace sylva;

void train(dist::Communicator& comm, const std::string& scenario) {
  mpi_test::ModelCase m = mpi_test::make_model("tree_lstm", 5);
  TrainerOptions o = mpi_test::trainer_options("tree_lstm");
  o.communicator = &comm;
  o.parallel.fingerprint_every = 1;
  if (scenario == "mismatch" && comm.rank() == 1) o.parallel.bucket_bytes = 1;  // one bucket per parameter
  if (scenario == "diverge" && comm.rank() == 1) (*m.ps)["Ws"].value.data<double>()[0] += 1e-3;
  Trainer trainer(m.program, *m.ps, m.loss, mpi_test::make_optimizer("tree_lstm"), o);
  const GraphBatch batch = GraphBatch::of(m.data);
  for (int step = 0; step < 3; ++step) trainer.step(batch);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    auto comm = dist::mpi_communicator({.deadline_s = scenario == "stall" ? 1.0 : 30.0});
    rank = comm->rank();
    if (scenario == "stall") {
      if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(4));
      comm->barrier("stall");
    } else if (scenario == "die") {
      comm->barrier("first");
      if (rank == 1) std::raise(SIGKILL);
      comm->barrier("second");
    } else if (scenario == "mismatch" || scenario == "diverge") {
      train(*comm, scenario);
    } else {
      std::fprintf(stderr, "usage: %s stall|die|mismatch|diverge (under mpirun)\n", argv[0]);
      return 2;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
  std::printf("rank %d: scenario '%s' ended without an error\n", rank, scenario.c_str());
  return 0;
}
