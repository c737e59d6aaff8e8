#include "cache_entry.h"

#include <filesystem>

#include "sylva/core/error.h"
#include "sylva/core/file.h"

namespace sylva::cuda {

namespace {

constexpr std::string_view kMagic = "sylva-nvrtc 1 ";

std::optional<std::string> damaged(std::string* why, const std::string& what) {
  if (why) *why = what;
  return std::nullopt;
}

}  // namespace

std::string encode_cache_entry(std::string_view payload) {
  std::string entry(kMagic);
  entry += std::to_string(payload.size()) + " " + hex64(fnv1a(payload)) + "\n";
  entry += payload;
  return entry;
}

std::optional<std::string> decode_cache_entry(std::string_view entry, std::string* why) {
  if (entry.substr(0, kMagic.size()) != kMagic) return damaged(why, "no 'sylva-nvrtc 1' header");
  size_t i = kMagic.size();
  // <bytes>: decimal digits, no leading zero (one spelling per number), at most 18 (no overflow).
  const size_t digits_begin = i;
  while (i < entry.size() && entry[i] >= '0' && entry[i] <= '9' && i - digits_begin < 19) ++i;
  const size_t digits = i - digits_begin;
  if (digits == 0 || digits > 18 || (digits > 1 && entry[digits_begin] == '0'))
    return damaged(why, "the payload size is not a decimal number");
  uint64_t bytes = 0;
  for (size_t k = digits_begin; k < i; ++k) bytes = bytes * 10 + static_cast<uint64_t>(entry[k] - '0');
  if (i >= entry.size() || entry[i] != ' ') return damaged(why, "no space after the payload size");
  ++i;
  const std::string_view sum = entry.substr(i, 16);
  if (sum.size() != 16 || sum.find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return damaged(why, "the hash is not 16 hex digits");
  i += 16;
  if (i >= entry.size() || entry[i] != '\n') return damaged(why, "the header line does not end after the hash");
  ++i;
  if (bytes != entry.size() - i)
    return damaged(why, "the header says " + std::to_string(bytes) + " bytes, the entry holds " +
                            std::to_string(entry.size() - i));
  const std::string_view payload = entry.substr(i);
  if (hex64(fnv1a(payload)) != sum) return damaged(why, "the payload does not match its hash");
  return std::string(payload);
}

std::optional<std::string> read_cache_entry(const std::string& path, std::string* why) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return damaged(why, "cannot read it (" + ec.message() + ")");
  if (size > static_cast<uintmax_t>(kMaxCacheEntryBytes))
    return damaged(why, std::to_string(size) + " bytes, over the " + std::to_string(kMaxCacheEntryBytes >> 20) +
                            " MiB an entry may hold");
  try {
    return decode_cache_entry(read_file(path), why);
  } catch (const Error& e) {
    return damaged(why, e.what());
  }
}

}  // namespace sylva::cuda
