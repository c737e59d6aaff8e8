#include "stream.h"

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

}  // namespace sylva::detail
