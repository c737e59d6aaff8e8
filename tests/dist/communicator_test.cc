// The communicator interface in one process (the `self` engine, option
// checks, the build without MPI). The MPI engine runs under mpirun in
// tests/dist/mpi/.
#include "sylva/dist/communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "support/test_util.h"

namespace sylva::dist {
namespace {

using test::error_of;

TEST(SelfCommunicator, EveryCollectiveIsTheIdentity) {
  auto comm = self_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->engine(), "self");
  std::vector<float> f{1.5f, -2.0f};
  std::vector<double> d{3.25};
  std::vector<int64_t> i{7, 8, 9};
  comm->allreduce_sum(std::span<float>(f), "f");
  comm->allreduce_sum(std::span<double>(d), "d");
  comm->allreduce_sum(std::span<int64_t>(i), "i");
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, (std::vector<double>{3.25}));
  EXPECT_EQ(i, (std::vector<int64_t>{7, 8, 9}));

  const std::vector<std::byte> mine{std::byte{1}, std::byte{2}, std::byte{3}};
  std::vector<int64_t> counts;
  EXPECT_EQ(comm->allgatherv(mine, "bytes", &counts), mine);
  EXPECT_EQ(counts, (std::vector<int64_t>{3}));
  EXPECT_TRUE(comm->allgatherv({}, "nothing", &counts).empty());
  EXPECT_EQ(counts, (std::vector<int64_t>{0}));

  std::vector<std::byte> data = mine;
  comm->broadcast(data, 0, "broadcast");
  EXPECT_EQ(data, mine);
  comm->barrier("barrier");
  EXPECT_FALSE(comm->broken());
  EXPECT_EQ(comm->bytes_sent(), 2 * 4 + 8 + 3 * 8 + 3 + 0 + 3);
  EXPECT_GE(comm->seconds(), 0.0);
}

TEST(SelfCommunicator, StartedAllreducesAreTheIdentityToo) {
  auto comm = self_communicator();
  std::vector<float> f{1.5f, -2.0f};
  std::vector<double> d{3.25};
  comm->start_allreduce_sum(std::span<float>(f), "f");
  comm->start_allreduce_sum(std::span<double>(d), "d");
  EXPECT_EQ(comm->started(), 0) << "nothing to wait for in a group of one";
  comm->progress();
  comm->finish_started();
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, (std::vector<double>{3.25}));
  EXPECT_FALSE(comm->broken());
}

TEST(SelfCommunicator, RejectsBadOptionsAndRoots) {
  EXPECT_CONTAINS(error_of([] { self_communicator({.deadline_s = 0.0}); }), "deadline_s must be a positive");
  EXPECT_CONTAINS(error_of([] { self_communicator({.deadline_s = std::nan("")}); }), "deadline_s");
  EXPECT_CONTAINS(error_of([] { self_communicator({.max_chunk = 0}); }), "max_chunk must be in [1, ");
  auto comm = self_communicator();
  std::vector<std::byte> data(4);
  EXPECT_CONTAINS(error_of([&] { comm->broadcast(data, 1, "weights"); }),
                  "broadcast of 'weights': root rank 1 is out of range (world size 1)");
  EXPECT_FALSE(comm->broken());  // an argument error is not a failed collective
}

TEST(MpiEngine, AvailabilityMatchesTheBuild) {
  if (mpi_available()) {
    GTEST_SKIP() << "built with MPI: the engine is tested under mpirun (tests/dist/mpi/)";
  }
  EXPECT_CONTAINS(error_of([] { mpi_communicator(); }),
                  "built without MPI: install Open MPI (apt install libopenmpi-dev openmpi-bin)");
}

TEST(MpiEngine, LaunchIsDetectedFromTheEnvironment) {
  // ctest does not run this binary under mpirun; pretend each launcher in turn.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) ::unsetenv(var);
  EXPECT_FALSE(launched_by_mpi());
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    ::setenv(var, "2", 1);
    EXPECT_TRUE(launched_by_mpi()) << var;
    ::unsetenv(var);
  }
}

TEST(MpiEngine, TheLocalRankComesFromTheLauncher) {
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
  for (const char* var : vars) ::unsetenv(var);
  EXPECT_EQ(local_rank(), -1);
  for (const char* var : vars) {
    ::setenv(var, "3", 1);
    EXPECT_EQ(local_rank(), 3) << var;
    ::setenv(var, "3x", 1);  // not a number: as if unset
    EXPECT_EQ(local_rank(), -1) << var;
    ::unsetenv(var);
  }
  ::setenv("SLURM_LOCALID", "1", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);  // Open MPI's first
  EXPECT_EQ(local_rank(), 0);
  for (const char* var : vars) ::unsetenv(var);
}

}  // namespace
}  // namespace sylva::dist
