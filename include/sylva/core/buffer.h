// Buffer: a 64-byte aligned, grow-only block of memory (host memory unless
// a backend gives it its own, e.g. CUDA device memory).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sylva {

/// Where a Buffer's bytes live. Host memory by default; a backend whose
/// kernels work on memory of their own (CUDA) provides one, and buffers
/// made with it hold pointers the host must never dereference.
class Memory {
 public:
  virtual ~Memory() = default;
  /// At least `bytes` bytes, 64-byte aligned; throws std::bad_alloc or sylva::Error.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  /// Copies `bytes` between two blocks of this memory.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  /// Whether the host may read and write these pointers directly.
  virtual bool host_visible() const = 0;
  /// The most bytes held at once since the last reset_peak() (a device's
  /// memory, cached blocks included); -1 where it is not tracked.
  virtual int64_t peak_bytes() const { return -1; }
  virtual void reset_peak() {}
};

/// Host memory (memcpy; blocks of 1 MB and more mapped on their own with
/// mmap, so that a released one goes back to the kernel at once; smaller
/// ones, and all under AddressSanitizer, from aligned_alloc).
Memory& host_memory();
/// Whether host_memory() maps blocks of 1 MB and more on their own (false
/// under AddressSanitizer, which checks heap blocks only).
bool host_memory_maps_large_blocks();
/// Zeroes the first `bytes` (1 MB or more) of `block` by giving its whole
/// pages back to the kernel, where `block` is a block host_memory() mapped
/// on its own (as Buffer::data() gives it): they read as zero, and are
/// resident again only once written. Returns false, doing nothing,
/// otherwise. One system call, whose cost grows with the pages that were
/// resident, and a page fault for each page written later: for a large
/// array written in a few rows between clears, such as an embedding
/// table's gradient, whose pages would otherwise all stay resident.
bool host_memory_zero_pages(void* block, size_t bytes);

/// Owns aligned memory. reserve() only ever grows the block, so a
/// buffer reused across minibatches stops allocating once it has seen the
/// largest one. Move-only.
class Buffer {
 public:
  Buffer() = default;
  /// An empty buffer whose blocks come from `memory` (which must outlive it).
  explicit Buffer(Memory& memory) : memory_(&memory) {}
  explicit Buffer(size_t bytes) { reserve(bytes); }
  /// Takes `data` (`bytes` long, allocated by `memory` or handed over to
  /// it), which `memory` releases when the buffer goes. Tensor::wrap uses
  /// it for memory Sylva did not allocate.
  Buffer(Memory& memory, void* data, size_t bytes) : memory_(&memory), data_(data), capacity_(bytes) {}
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
  Memory& memory() const { return *memory_; }
  /// Number of allocations made so far (for "no allocation in steady state" tests).
  size_t allocations() const { return allocations_; }

 private:
  Memory* memory_ = &host_memory();
  void* data_ = nullptr;
  size_t capacity_ = 0;
  size_t allocations_ = 0;
};

}  // namespace sylva
