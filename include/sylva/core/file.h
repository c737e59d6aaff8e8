// Small file helpers shared by modules that write results.
#pragma once

#include <string>
#include <string_view>

namespace sylva {

/// Replaces `path` with `bytes` atomically: writes a temporary file next
/// to it, syncs it and renames it over `path`, so readers see the old file
/// or the new one, never a part. sylva::Error naming the path on failure.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// The whole file; sylva::Error naming the path if it cannot be read.
std::string read_file(const std::string& path);

/// Nesting of [ ] and { } that JSON and YAML readers accept: far beyond any
/// real file, well under what overflows a recursive parser's stack.
constexpr int kMaxNesting = 512;

/// Before a parser sees `text` (JSON or YAML from `what`, a file name):
/// sylva::Error naming the line if its brackets nest deeper than
/// `max_depth` (brackets inside double-quoted strings and after # comments
/// in YAML do not count).
void check_nesting(std::string_view text, const std::string& what, int max_depth = kMaxNesting);

}  // namespace sylva
