// Buffer: a 64-byte aligned, grow-only block of host memory.
#pragma once

#include <cstddef>

namespace sylva {

/// Owns aligned host memory. reserve() only ever grows the block, so a
/// buffer reused across minibatches stops allocating once it has seen the
/// largest one. Move-only.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) { reserve(bytes); }
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// Ensures capacity() >= bytes. Growing keeps the old contents when
  /// `keep` is true; otherwise the new block is uninitialised.
  /// Returns true if it had to allocate.
  bool reserve(size_t bytes, bool keep = false);
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  /// Number of allocations made so far (for "no allocation in steady state" tests).
  size_t allocations() const { return allocations_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
  size_t allocations_ = 0;
};

}  // namespace sylva
