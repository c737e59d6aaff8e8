// The worker stream behind streaming: order, events, errors.
#include "../../src/runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sylva::detail {
namespace {

TEST(WorkerStream, RunsWorkInOrderOnAnotherThread) {
  WorkerStream s;
  std::vector<int> seen;  // written by the worker only, read after wait()
  std::atomic<bool> other_thread{false};
  const auto caller = std::this_thread::get_id();
  uint64_t last = 0;
  for (int k = 0; k < 50; ++k)
    last = s.enqueue([&, k] {
      seen.push_back(k);
      if (std::this_thread::get_id() != caller) other_thread = true;
    });
  EXPECT_EQ(last, 50u);
  s.wait(last);
  ASSERT_EQ(seen.size(), 50u);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(seen[static_cast<size_t>(k)], k);
  EXPECT_TRUE(other_thread);
}

TEST(WorkerStream, AnErrorIsRethrownToTheWaiterAndLaterWorkIsDropped) {
  WorkerStream s;
  std::atomic<int> ran{0};
  s.enqueue([&] { ++ran; });
  const uint64_t bad = s.enqueue([] { throw std::runtime_error("chunk 2 failed"); });
  s.enqueue([&] { ++ran; });  // after the error: dropped
  try {
    s.wait(bad);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 2 failed");
  }
  EXPECT_EQ(ran.load(), 1);
  // The stream is usable again.
  const uint64_t next = s.enqueue([&] { ++ran; });
  s.wait(next);
  EXPECT_EQ(ran.load(), 2);
  s.synchronize();
}

TEST(WorkerStream, DestructionRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    WorkerStream s;
    for (int k = 0; k < 10; ++k) s.enqueue([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 10);
}

}  // namespace
}  // namespace sylva::detail
