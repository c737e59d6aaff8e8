#include "sylva/train/vocabulary.h"

#include <limits>

#include "sylva/core/error.h"

namespace sylva {

int32_t Vocabulary::add(std::string_view token) {
  std::string key(token);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  SYLVA_CHECK(tokens_.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()),
              "[vocabulary] cannot add '", key, "': the vocabulary is full (", tokens_.size(), " tokens)");
  const auto id = static_cast<int32_t>(tokens_.size());
  tokens_.push_back(key);
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t Vocabulary::id(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it != ids_.end() ? it->second : unk_;
}

bool Vocabulary::contains(std::string_view token) const { return ids_.count(std::string(token)) != 0; }

const std::string& Vocabulary::token(int32_t id) const {
  SYLVA_CHECK(id >= 0 && id < size(), "[vocabulary] token id ", id, " out of range [0, ", size(), ")");
  return tokens_[id];
}

void Vocabulary::set_unknown(std::string_view token) { unk_ = add(token); }

}  // namespace sylva
