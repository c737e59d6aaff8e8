// The MPI test programs (tests/dist/mpi/, run by ctest under mpirun): every
// rank runs the same gtest tests in the same order, so tests may call
// collectives. Rank 0 prints gtest's usual output; other ranks print only
// their failures, prefixed with the rank.
#pragma once

#include "sylva/dist/communicator.h"

namespace sylva::mpi_test {

/// All ranks of the job (made by main() with a 60 s deadline).
dist::Communicator& world();

}  // namespace sylva::mpi_test
