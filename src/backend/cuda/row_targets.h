// Internal, host-only: whether a scatter-add's target rows are distinct,
// so the CUDA backend can add without atomics (each row has one writer).
// Pure C++ (no CUDA): tested in every configuration.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sylva::cuda {

/// Whether the non-negative entries of `idx` (row indices below `rows`;
/// negative ones are skipped rows) are all different. An empty span is the
/// identity, distinct by definition. `seen` is scratch kept by the caller
/// between calls: it is left all zero, so each call costs O(idx.size()),
/// not O(rows). An index >= rows makes it return false (the kernel's
/// atomic path then does what it always did).
inline bool distinct_rows(std::span<const int32_t> idx, int64_t rows, std::vector<uint64_t>& seen) {
  const size_t words = static_cast<size_t>((rows + 63) / 64);
  if (seen.size() < words) seen.resize(words, 0);
  size_t k = 0;
  bool distinct = true;
  for (; k < idx.size(); ++k) {
    const int32_t r = idx[k];
    if (r < 0) continue;
    if (r >= rows) {
      distinct = false;
      break;
    }
    uint64_t& w = seen[static_cast<size_t>(r) / 64];
    const uint64_t bit = uint64_t{1} << (r % 64);
    if (w & bit) {
      distinct = false;
      break;
    }
    w |= bit;
  }
  for (size_t j = 0; j < k; ++j)  // back to all zero: only the words this call touched
    if (idx[j] >= 0) seen[static_cast<size_t>(idx[j]) / 64] = 0;
  return distinct;
}

}  // namespace sylva::cuda
