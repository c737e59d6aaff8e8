#include "stream.h"

#include "side_queue.h"

#include <utility>

#include "sylva/core/denormals.h"

namespace sylva::detail {

WorkerStream::WorkerStream() : thread_([this] { loop(); }) {}

WorkerStream::~WorkerStream() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

uint64_t WorkerStream::enqueue(std::function<void()> fn) {
  uint64_t event;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(std::move(fn));
    event = ++queued_;
  }
  work_.notify_one();
  return event;
}

void WorkerStream::wait(uint64_t e) {
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, [&] { return completed_ >= e || error_; });
  if (!error_) return;
  done_.wait(lock, [&] { return completed_ == queued_; });
  std::exception_ptr err = std::exchange(error_, nullptr);
  std::rethrow_exception(err);
}

void WorkerStream::synchronize() {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lock(m_);
    last = queued_;
  }
  wait(last);
}

void WorkerStream::drain() noexcept {
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, [&] { return completed_ == queued_; });
  error_ = nullptr;
}

void WorkerStream::loop() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != nullptr;  // after an error, later work is dropped
    lock.unlock();
    std::exception_ptr err;
    if (!skip) {
      try {
        DenormalScope flush;  // as on the thread that queued fn
        fn();
      } catch (...) {
        err = std::current_exception();
      }
    }
    lock.lock();
    if (err && !error_) error_ = err;
    ++completed_;
    done_.notify_all();
  }
}

namespace {

// Queues the backend calls made while it lives on lane `lane`.
class OnLane {
 public:
  OnLane(Backend& b, int lane) : b_(b), previous_(b.set_lane(lane)) {}
  ~OnLane() {
    try {
      b_.set_lane(previous_);
    } catch (...) {  // a lane it came from exists
    }
  }
  OnLane(const OnLane&) = delete;
  OnLane& operator=(const OnLane&) = delete;

 private:
  Backend& b_;
  int previous_;
};

class ThreadQueue final : public SideQueue {
 public:
  uint64_t enqueue(std::function<void()> fn) override { return worker_.enqueue(std::move(fn)); }
  void wait(uint64_t e) override { worker_.wait(e); }
  void join() override { worker_.synchronize(); }
  void drain() noexcept override { worker_.drain(); }
  bool other_thread() const override { return true; }

 private:
  WorkerStream worker_;
};

// Lane 1 of a backend that takes calls from one thread: each piece of work
// waits there for what lane 0 queued before it.
class LaneQueue final : public SideQueue {
 public:
  explicit LaneQueue(Backend& b) : b_(b) {}
  uint64_t enqueue(std::function<void()> fn) override {
    const uint64_t ready = b_.record();
    OnLane side(b_, 1);
    b_.wait(ready);
    fn();
    return b_.record();
  }
  void wait(uint64_t e) override { b_.wait(e); }
  void join() override {
    uint64_t done = 0;
    {
      OnLane side(b_, 1);
      done = b_.record();
    }
    b_.wait(done);
  }
  void drain() noexcept override {
    try {
      join();
    } catch (...) {  // unwinding from an error already
    }
  }
  bool other_thread() const override { return false; }

 private:
  Backend& b_;
};

}  // namespace

std::unique_ptr<SideQueue> make_side_queue(Backend& backend) {
  if (!backend.concurrent_calls()) return std::make_unique<LaneQueue>(backend);
  return std::make_unique<ThreadQueue>();
}

}  // namespace sylva::detail
