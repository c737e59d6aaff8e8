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

}  // namespace sylva
