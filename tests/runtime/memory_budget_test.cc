// ExecutorOptions::memory_budget_bytes: a batch whose values would not fit
// is refused before anything is allocated, with an error naming the batch
// and its largest sample; an allocation that still fails is a sylva::Error.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

// test::ChainNet over vocabulary 4, in its own parameter set.
struct ChainModel {
  explicit ChainModel(int64_t h) : net(ps, 4, h) {}
  ParameterSet ps{DType::f32, 1};
  test::ChainNet net;
  const Program& p = net.program;
  Symbol loss = net.loss;
};

std::vector<InputGraph> chains(int n, int32_t length) { return test::id_chains(n, length, 4); }

TEST(MemoryBudget, ABatchOverTheBudgetIsRefusedNamingItsLargestSample) {
  ChainModel m(64);
  std::vector<InputGraph> data = chains(3, 100);
  data.push_back(InputGraph::chain(5000, "the long one"));
  data.back().set_ids("x", std::vector<int32_t>(5000, 1));
  Executor ex(m.p, m.ps, {.memory_budget_bytes = 1 << 20});
  const std::string msg = test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::train); });
  EXPECT_CONTAINS(msg, "a batch of 4 samples with 5300 vertices needs about");
  EXPECT_CONTAINS(msg, "over the memory budget of 1 MB");
  EXPECT_CONTAINS(msg, "its largest sample, 'the long one', has 5000 vertices");
  EXPECT_EQ(ex.allocations(), 0u) << "nothing may be allocated for a refused batch";
}

TEST(MemoryBudget, BatchesWithinTheBudgetRun) {
  ChainModel m(64);
  const std::vector<InputGraph> data = chains(3, 100);
  Executor ex(m.p, m.ps, {.memory_budget_bytes = 64 << 20});
  for (int step = 0; step < 2; ++step) {
    ex.forward(GraphBatch::of(data), Mode::train);
    ex.backward(m.loss);
  }
  EXPECT_TRUE(std::isfinite(ex.scalar(m.loss)));
}

TEST(MemoryBudget, TheDefaultBudgetRefusesWhatTheMachineCannotHold) {
  const size_t avail = available_memory_bytes();
  if (avail == 0) GTEST_SKIP() << "available memory unknown here (no /proc/meminfo)";
  ChainModel m(1024);  // 4 KB per value and vertex, at least ten values of F and dF: > 40 KB a vertex
  const int32_t length = static_cast<int32_t>(std::min<size_t>(avail / 16384 + 1, INT32_MAX / 2));
  std::vector<InputGraph> data{InputGraph::chain(length, "huge")};
  data[0].set_ids("x", std::vector<int32_t>(static_cast<size_t>(length), 0));
  Executor ex(m.p, m.ps);
  EXPECT_CONTAINS(test::error_of([&] { ex.forward(GraphBatch::of(data), Mode::train); }), "over the memory budget");
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Under an address-space limit, with the budget check out of the way, the
// allocation that fails surfaces as sylva::Error (the sanitizers reserve
// address space of their own, so this runs only without them).
TEST(MemoryBudgetDeathTest, AFailedAllocationIsASylvaError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ChainModel m(256);
        const std::vector<InputGraph> data = chains(4, 100000);  // ~ 4e5 vertices * KBs
        rlimit lim{};
        getrlimit(RLIMIT_AS, &lim);
        std::FILE* f = std::fopen("/proc/self/status", "r");
        char line[256];
        size_t vm_kb = 0;
        while (f && std::fgets(line, sizeof line, f))
          if (std::sscanf(line, "VmSize: %zu kB", &vm_kb) == 1) break;
        if (f) std::fclose(f);
        lim.rlim_cur = (vm_kb + 256 * 1024) * 1024;  // 256 MB more than now
        setrlimit(RLIMIT_AS, &lim);
        Executor ex(m.p, m.ps, {.memory_budget_bytes = size_t{1} << 50});
        try {
          ex.forward(GraphBatch::of(data), Mode::train);
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(3), "out of memory in forward\\(\\) of a batch of 4 samples with 400000 vertices");
}
#endif

}  // namespace
}  // namespace sylva
