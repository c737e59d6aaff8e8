#include "mpi_main.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "sylva/core/error.h"
#include "sylva/core/log.h"

namespace sylva::mpi_test {
namespace {

dist::Communicator* g_world = nullptr;

// Failures of a rank other than 0, one line each, and (as in the
// single-process tests) any warning sylva logs fails the test.
class RankListener : public testing::EmptyTestEventListener {
 public:
  RankListener(int rank, bool print) : rank_(rank), print_(print) {}
  void OnTestStart(const testing::TestInfo&) override {
    set_log_handler([](LogLevel level, std::string_view msg) {
      if (level >= LogLevel::warning) ADD_FAILURE() << "sylva logged a warning: " << std::string(msg);
    });
  }
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (print_ && r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    set_log_handler(nullptr);
    if (print_ && info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
  bool print_;
};

}  // namespace

dist::Communicator& world() { return *g_world; }

}  // namespace sylva::mpi_test

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<sylva::dist::Communicator> world;
  try {
    world = sylva::dist::mpi_communicator({.deadline_s = 60.0});
  } catch (const sylva::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  sylva::mpi_test::g_world = world.get();
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  const int rank = world->rank();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new sylva::mpi_test::RankListener(rank, rank != 0));
  const int failed = RUN_ALL_TESTS();
  // Every rank reports whether any rank failed (a rank that failed alone
  // would otherwise let the others pass).
  int64_t any = failed != 0 ? 1 : 0;
  if (!world->broken()) world->allreduce_sum(std::span<int64_t>(&any, 1), "test results");
  if (rank == 0 && any != 0 && failed == 0) std::fprintf(stderr, "another rank failed (see its [rank N] lines)\n");
  world.reset();
  return any != 0 ? 1 : 0;
}
