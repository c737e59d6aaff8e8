#include "device_checks.h"

#include <utility>

#include "sylva/core/error.h"

namespace sylva::cuda {

DeviceChecks::DeviceChecks(size_t slots) : slots_(slots) {
  SYLVA_CHECK(slots > 0, "[cuda] DeviceChecks needs at least one flag");
}

size_t DeviceChecks::claim(Describe describe) {
  SYLVA_ASSERT(room(), "claim() on a full ring: settle() and restart() first");
  describe_.push_back(std::move(describe));
  return next_++;
}

void DeviceChecks::settle(std::span<const DeviceFlag> flags) {
  SYLVA_ASSERT(flags.size() == count(), "settle() takes the ", count(), " pending flags, got ", flags.size());
  std::vector<Describe> describe = std::exchange(describe_, {});
  first_ = next_;
  size_t flagged = 0, earliest = flags.size();
  for (size_t k = 0; k < flags.size(); ++k) {
    if (flags[k].row < 0) continue;
    if (flagged++ == 0) earliest = k;
  }
  if (flagged == 0) return;
  const DeviceFlag& f = flags[earliest];
  std::string more;
  if (flagged > 1)
    more = " (" + std::to_string(flagged - 1) + " later call" + (flagged > 2 ? "s" : "") + " flagged too)";
  SYLVA_THROW(describe[earliest](f.row, f.value), more);
}

void DeviceChecks::restart() {
  SYLVA_ASSERT(count() == 0, "restart() with ", count(), " flags not settled");
  first_ = next_ = 0;
}

}  // namespace sylva::cuda
