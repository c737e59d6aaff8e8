// Internal: where streaming runs the work moved out of the task loop -- a
// second CPU thread (WorkerStream), or lane 1 of a device whose calls come
// from one thread (a second CUDA stream). The vertex runner queues the same
// work on either, through this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "sylva/backend/backend.h"

namespace sylva::detail {

class SideQueue {
 public:
  virtual ~SideQueue() = default;
  /// Queues `fn` to run after the work the caller queued so far; returns
  /// an event for wait(). On a device lane, fn runs at once on the calling
  /// thread with the backend switched to the side lane (it queues device
  /// work); on a thread, fn runs there later.
  virtual uint64_t enqueue(std::function<void()> fn) = 0;
  /// The caller's later work starts after event `e`.
  virtual void wait(uint64_t e) = 0;
  /// The caller's later work starts after everything queued.
  virtual void join() = 0;
  /// join() that swallows errors, for callers unwinding from one.
  virtual void drain() noexcept = 0;
  /// Whether fn runs on another thread: its observer events must then be
  /// buffered and reported by the caller's thread.
  virtual bool other_thread() const = 0;
};

/// Lane 1 of `backend` when it takes calls from one thread, else a worker thread.
std::unique_ptr<SideQueue> make_side_queue(Backend& backend);

}  // namespace sylva::detail
