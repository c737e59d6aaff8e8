// Internal: the CUDA backend's checks of ids and labels on the device,
// without a wait per call. Each validating kernel (lookup, cross-entropy
// and their gradients) gets a flag of its own in a device array: the first
// block to find a bad row writes the row and the value there. The host
// reads the flags back where it waits for the device anyway (download,
// synchronize: once per training step) and then throws the earliest
// flagged call's error, naming its row and value. The flags sit in a ring:
// when it is full the backend reads it back first (a wait every `slots`
// checks, not every call). Pure C++: the backend does the copies, this
// class the bookkeeping, tested without a GPU
// (tests/backend/device_checks_test.cc).
//
// @code
// cuda::DeviceChecks checks(512);
// if (!checks.room()) { /* read back checks.pending() flags, settle(), restart() */ }
// const size_t slot = checks.claim([](int64_t row, int64_t id) { return "..."; });
// // launch the kernel with &device_flags[slot]; later, after a wait:
// checks.settle(host_flags_of_the_pending_range);  // throws the first flagged call's error
// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sylva::cuda {

/// What a validating kernel writes: the bad row (-1: none; all bytes 0xff,
/// as cudaMemset(0xff) leaves it) and the id or label found there.
struct DeviceFlag {
  int64_t row;
  int64_t value;
};

class DeviceChecks {
 public:
  /// Words a flagged call's error from its row and value.
  using Describe = std::function<std::string(int64_t row, int64_t value)>;

  explicit DeviceChecks(size_t slots);

  size_t slots() const { return slots_; }
  /// Whether claim() has a free flag; otherwise settle() the pending ones and restart() first.
  bool room() const { return next_ < slots_; }
  /// The flag of the next validating call (an index into the device array);
  /// `describe` words its error if the device flags it. Needs room().
  size_t claim(Describe describe);
  /// The flags claimed and not yet settled: [first, first + count) of the array.
  size_t first() const { return first_; }
  size_t count() const { return describe_.size(); }

  /// Takes the host copy of the pending flags (count() of them, read after
  /// their kernels finished) and forgets them; throws sylva::Error with the
  /// earliest flagged call's words, and how many other calls were flagged.
  /// The caller resets those device flags to -1 before their slots come
  /// round again.
  void settle(std::span<const DeviceFlag> flags);
  /// Starts the ring over at flag 0. Needs count() == 0 and the device's
  /// resets of the settled flags done (the backend waits for the device).
  void restart();

 private:
  size_t slots_;
  size_t first_ = 0, next_ = 0;
  std::vector<Describe> describe_;  // of flags [first_, next_)
};

}  // namespace sylva::cuda
