#include "sylva/core/hash.h"

#include <cstdio>

namespace sylva {

uint64_t fnv1a(std::string_view bytes, uint64_t h) {
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace sylva
