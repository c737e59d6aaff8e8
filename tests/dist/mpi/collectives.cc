// The Open MPI engine's collectives against a serial reference: every rank
// can make every rank's input (a function of the rank), so each computes
// the expected result itself. Run with 2 and 4 ranks (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mpi_main.h"
#include "sylva/core/error.h"
#include "sylva/core/hash.h"
#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/dist/device_communicator.h"

namespace sylva::dist {
namespace {

using mpi_test::world;
using test::error_of;

// Rank r's i-th input: small integers, so every sum is exact in float too
// and the reference does not depend on the order of the additions.
template <class T>
T input(int r, int64_t i) {
  return static_cast<T>((r + 1) * (i % 97) - 40 * r);
}

template <class T>
void check_allreduce(Communicator& comm, int64_t n, const char* what) {
  std::vector<T> data(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = input<T>(comm.rank(), i);
  comm.allreduce_sum(std::span<T>(data), what);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    T expected = 0;
    for (int r = 0; r < comm.size(); ++r) expected += input<T>(r, i);
    if (data[static_cast<size_t>(i)] != expected && wrong++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << data[static_cast<size_t>(i)] << ", expected " << expected;
  }
  EXPECT_EQ(wrong, 0) << what << " (" << n << " elements)";
}

TEST(MpiCollectives, WorldIsTheWholeJob) {
  EXPECT_EQ(world().engine(), "mpi");
  EXPECT_GE(world().size(), 2);
  EXPECT_LT(world().rank(), world().size());
  EXPECT_TRUE(launched_by_mpi());
}

TEST(MpiCollectives, AllreduceSumsEveryTypeAndSize) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, (int64_t{1} << 20) + 3}) {
    check_allreduce<float>(world(), n, "f32");
    check_allreduce<double>(world(), n, "f64");
    check_allreduce<int64_t>(world(), n, "i64");
  }
}

TEST(MpiCollectives, AllreduceOfALargeBuffer) {
  check_allreduce<float>(world(), int64_t{1} << 23, "32 MiB");  // 8 Mi floats in one call
}

TEST(MpiCollectives, EveryRankHoldsTheSameBitsOfARoundedSum) {
  std::mt19937_64 rng(static_cast<uint64_t>(world().rank()) * 7919 + 1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> data(4099);
  for (double& x : data) x = u(rng) * 1e3;
  world().allreduce_sum(std::span<double>(data), "random");
  uint64_t h = fnv1a(std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(double)));
  const std::vector<std::byte> every = world().allgatherv(std::as_bytes(std::span(&h, 1)), "hashes");
  ASSERT_EQ(every.size(), sizeof(uint64_t) * static_cast<size_t>(world().size()));
  for (int r = 0; r < world().size(); ++r)
    EXPECT_EQ(std::memcmp(every.data() + static_cast<size_t>(r) * sizeof h, &h, sizeof h), 0) << "rank " << r;
}

// Rank r sends (r * 3001) % 5000 bytes (rank 0: none), byte k = r * 31 + k.
std::vector<std::byte> gather_input(int r) {
  std::vector<std::byte> out(static_cast<size_t>((r * 3001) % 5000));
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::byte>((r * 31 + static_cast<int>(k)) & 0xff);
  return out;
}

void check_allgatherv(Communicator& comm) {
  std::vector<int64_t> counts;
  const std::vector<std::byte> all = comm.allgatherv(gather_input(comm.rank()), "uneven", &counts);
  std::vector<std::byte> expected;
  ASSERT_EQ(counts.size(), static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    const std::vector<std::byte> theirs = gather_input(r);
    EXPECT_EQ(counts[static_cast<size_t>(r)], static_cast<int64_t>(theirs.size())) << "rank " << r;
    expected.insert(expected.end(), theirs.begin(), theirs.end());
  }
  EXPECT_EQ(all, expected);
  // Nobody sends anything.
  EXPECT_TRUE(comm.allgatherv({}, "empty", &counts).empty());
  EXPECT_EQ(counts, std::vector<int64_t>(static_cast<size_t>(comm.size()), 0));
}

void check_broadcast(Communicator& comm, size_t n) {
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<std::byte> data(n, std::byte{0});
    if (comm.rank() == root)
      for (size_t k = 0; k < n; ++k) data[k] = static_cast<std::byte>((k * 7 + static_cast<size_t>(root)) & 0xff);
    comm.broadcast(data, root, "from root");
    size_t wrong = 0;
    for (size_t k = 0; k < n; ++k) wrong += data[k] != static_cast<std::byte>((k * 7 + static_cast<size_t>(root)) & 0xff);
    EXPECT_EQ(wrong, 0u) << "root " << root << ", " << n << " bytes";
  }
}

TEST(MpiCollectives, AllgathervConcatenatesInRankOrder) { check_allgatherv(world()); }

TEST(MpiCollectives, BroadcastFromEveryRoot) {
  check_broadcast(world(), 0);
  check_broadcast(world(), 10007);
  world().barrier("after broadcasts");
}

// Buffers larger than one MPI call (CommOptions::max_chunk) go in pieces;
// a small chunk exercises that path with small buffers.
TEST(MpiCollectives, BuffersLargerThanAChunkGoInPieces) {
  auto comm = mpi_communicator({.deadline_s = 60.0, .max_chunk = 1000});
  check_allreduce<float>(*comm, 12345, "pieces f32");
  check_allreduce<int64_t>(*comm, 2001, "pieces i64");
  check_allgatherv(*comm);
  check_broadcast(*comm, 4321);
  EXPECT_FALSE(comm->broken());
}

TEST(MpiCollectives, CountsTimeAndBytes) {
  auto comm = mpi_communicator();
  std::vector<double> data(100, 1.0);
  comm->allreduce_sum(std::span<double>(data), "counted");
  EXPECT_EQ(comm->bytes_sent(), 800);
  EXPECT_GT(comm->seconds(), 0.0);
}

// Started allreduces: several in flight at once (empty and large ones
// among them), moved on by progress() between bits of other work, then a
// blocking collective, which finishes them first.
TEST(MpiCollectives, StartedAllreducesCompleteInOrder) {
  auto comm = mpi_communicator();
  const int me = comm->rank();
  const std::vector<int64_t> sizes{5, 0, (int64_t{1} << 20) + 3, 1000};
  std::vector<std::vector<float>> f;
  std::vector<std::vector<double>> d;
  for (int64_t n : sizes) {
    f.emplace_back(static_cast<size_t>(n));
    d.emplace_back(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) f.back()[static_cast<size_t>(i)] = input<float>(me, i);
    for (int64_t i = 0; i < n; ++i) d.back()[static_cast<size_t>(i)] = input<double>(me, i + 1);
  }
  double busy = 0.0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    comm->start_allreduce_sum(std::span<float>(f[b]), "started f32 " + std::to_string(b));
    for (int k = 0; k < 1000; ++k) busy += std::sqrt(static_cast<double>(k + me));  // other work
    comm->progress();
    comm->start_allreduce_sum(std::span<double>(d[b]), "started f64 " + std::to_string(b));
  }
  EXPECT_GT(busy, 0.0);
  comm->progress();
  int64_t after[1] = {1};
  comm->allreduce_sum(std::span<int64_t>(after), "after the started ones");
  EXPECT_EQ(comm->started(), 0);
  EXPECT_EQ(after[0], comm->size());
  for (size_t b = 0; b < sizes.size(); ++b)
    for (int64_t i = 0; i < sizes[b]; ++i) {
      float ef = 0;
      double ed = 0;
      for (int r = 0; r < comm->size(); ++r) ef += input<float>(r, i), ed += input<double>(r, i + 1);
      ASSERT_EQ(f[b][static_cast<size_t>(i)], ef) << "buffer " << b << " element " << i;
      ASSERT_EQ(d[b][static_cast<size_t>(i)], ed) << "buffer " << b << " element " << i;
    }
  // And finish_started() alone.
  std::vector<double> one(3, 1.0);
  comm->start_allreduce_sum(std::span<double>(one), "alone");
  comm->finish_started();
  EXPECT_EQ(one, std::vector<double>(3, static_cast<double>(comm->size())));
  EXPECT_FALSE(comm->broken());
}

TEST(MpiCollectives, AMismatchedStartedAllreduceIsNamedOnEveryRank) {
  auto comm = mpi_communicator();
  const int me = comm->rank();
  std::vector<double> ok(4, 1.0), bad(me == 1 ? 6 : 2, 1.0);
  const std::string e = error_of([&] {
    comm->start_allreduce_sum(std::span<double>(ok), "bucket 0: W");
    comm->start_allreduce_sum(std::span<double>(bad), "bucket 1: U");
    comm->finish_started();
  });
  EXPECT_CONTAINS(e, "mismatched collective #1");
  EXPECT_CONTAINS(e, me == 1 ? "this rank called allreduce_sum of 'bucket 1: U' (6 f64) but rank 0 called "
                               "allreduce_sum of 'bucket 1: U' (2 f64)"
                             : "but rank 1 called allreduce_sum of 'bucket 1: U' (6 f64)");
  EXPECT_TRUE(comm->broken());
  EXPECT_CONTAINS(error_of([&] { comm->progress(); }), "broken");
}

// The call check: every rank names the rank that called something else,
// and the communicator refuses further calls.
TEST(MpiCollectives, AMismatchedCountIsNamedOnEveryRank) {
  auto comm = mpi_communicator();
  const int me = comm->rank();
  std::vector<float> data(me == 1 ? 5 : 4, 1.0f);
  const std::string e = error_of([&] { comm->allreduce_sum(std::span<float>(data), "grads"); });
  EXPECT_CONTAINS(e, "mismatched collective #0");
  if (me == 1) {
    EXPECT_CONTAINS(e, "this rank called allreduce_sum of 'grads' (5 f32) but rank 0 called allreduce_sum of 'grads' (4 f32)");
  } else {
    EXPECT_CONTAINS(e, "this rank called allreduce_sum of 'grads' (4 f32) but rank 1 called allreduce_sum of 'grads' (5 f32)");
  }
  EXPECT_TRUE(comm->broken());
  EXPECT_CONTAINS(error_of([&] { comm->barrier("next"); }), "this communicator is broken");
}

TEST(MpiCollectives, AMismatchedKindOrNameIsNamed) {
  {
    auto comm = mpi_communicator();
    std::vector<double> d(3, 0.0);
    const std::string e = error_of([&] {
      if (comm->rank() == 0) comm->barrier("sync");
      else comm->allreduce_sum(std::span<double>(d), "sync");
    });
    EXPECT_CONTAINS(e, comm->rank() == 0 ? "but rank 1 called allreduce_sum of 'sync' (3 f64)" : "but rank 0 called barrier 'sync'");
  }
  {
    auto comm = mpi_communicator();
    std::vector<float> d(8, 0.0f);
    const std::string name = comm->rank() == comm->size() - 1 ? "bucket 1: W,U" : "bucket 1: W,U,b";
    const std::string e = error_of([&] { comm->allreduce_sum(std::span<float>(d), name); });
    EXPECT_CONTAINS(e, "mismatched collective #0");
    EXPECT_CONTAINS(e, "'bucket 1: W,U");
  }
}

// The device engines' call check (the host-staged engine on the simulated
// device; NCCL's is the same function): a rank summing other buffers is
// named on every rank, before any bytes move.
TEST(DeviceCollectives, SumsOnTheDeviceAndNamesAMismatchedCall) {
  Backend& sim = test::sim_device();
  const std::unique_ptr<DeviceCommunicator> c = host_staged_communicator(world(), sim);
  const int n = 1000;
  std::vector<float> f(n);
  std::vector<double> d(7);
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(i)] = input<float>(world().rank(), i);
  for (int i = 0; i < 7; ++i) d[static_cast<size_t>(i)] = input<double>(world().rank(), i);
  Buffer bf(sim.memory()), bd(sim.memory());
  bf.reserve(f.size() * sizeof(float));
  bd.reserve(d.size() * sizeof(double));
  sim.upload(bf.data(), f.data(), f.size() * sizeof(float));
  sim.upload(bd.data(), d.data(), d.size() * sizeof(double));
  const MatView views[3] = {{bf.data(), 10, 100, DType::f32}, {bd.data(), 0, 7, DType::f64}, {bd.data(), 7, 1, DType::f64}};
  c->allreduce_sum(views, "mixed");
  sim.download(f.data(), bf.data(), f.size() * sizeof(float));
  sim.download(d.data(), bd.data(), d.size() * sizeof(double));
  for (int i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < world().size(); ++r) want += input<float>(r, i);
    ASSERT_EQ(f[static_cast<size_t>(i)], want) << i;
  }
  for (int i = 0; i < 7; ++i) {
    double want = 0;
    for (int r = 0; r < world().size(); ++r) want += input<double>(r, i);
    ASSERT_EQ(d[static_cast<size_t>(i)], want) << i;
  }
  // Rank 1 sums one more row: every rank names it, and the host communicator is still whole.
  const MatView other{bf.data(), world().rank() == 1 ? 10 : 9, 100, DType::f32};
  const std::string e = error_of([&] { c->allreduce_sum({&other, 1}, "grads"); });
  EXPECT_CONTAINS(e, "device allreduce_sum mismatch: rank ");
  EXPECT_CONTAINS(e, "\"grads: float32[1000]\"");
  EXPECT_CONTAINS(e, "\"grads: float32[900]\"");
  EXPECT_TRUE(c->broken());
  EXPECT_FALSE(world().broken());
}

}  // namespace
}  // namespace sylva::dist
