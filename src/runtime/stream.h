// Internal: an in-order queue of work on a second CPU thread, with events
// (the CPU form of a CUDA stream: work queued on it runs in order,
// concurrently with the caller, who waits on events).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace sylva::detail {

class WorkerStream {
 public:
  WorkerStream();
  ~WorkerStream();  // runs what is queued, then joins
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  /// Queues `fn`; returns its event (1, 2, ...), complete once fn has run.
  uint64_t enqueue(std::function<void()> fn);
  /// Blocks until event `e` is complete. If queued work threw, waits for
  /// the queue to drain (work after the error is dropped) and rethrows.
  void wait(uint64_t e);
  /// wait() for everything queued so far.
  void synchronize();
  /// synchronize() that swallows errors (for unwinding callers).
  void drain() noexcept;

 private:
  void loop();

  std::mutex m_;
  std::condition_variable work_, done_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0, completed_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after the state above exists
};

}  // namespace sylva::detail
