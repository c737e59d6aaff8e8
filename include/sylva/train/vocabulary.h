// Vocabulary: token <-> id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sylva {

/// Maps tokens to dense ids in insertion order. An optional unknown token
/// receives every lookup that misses.
class Vocabulary {
 public:
  Vocabulary() = default;
  /// Returns the id of `token`, adding it if new.
  int32_t add(std::string_view token);
  /// Id of `token`; the unknown id if set and missing; -1 otherwise.
  int32_t id(std::string_view token) const;
  bool contains(std::string_view token) const;
  /// Throws sylva::Error if id is out of range.
  const std::string& token(int32_t id) const;
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  /// Adds `token` if needed and makes it the target of unknown lookups.
  void set_unknown(std::string_view token);
  int32_t unknown_id() const { return unk_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  int32_t unk_ = -1;
};

}  // namespace sylva
