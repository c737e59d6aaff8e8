// Hostile-nesting fixtures shared by the JSON (deep_nesting_test.cc) and
// CoSA YAML (cosa_deep_nesting_test.cc) reader tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace sylva::test {

/// A line of `depth` opening brackets, then as many closing ones.
inline std::string nested(char open, char close, int depth) {
  return std::string("\n") + std::string(static_cast<size_t>(depth), open) +
         std::string(static_cast<size_t>(depth), close) + "\n";
}

/// `text` written to the temporary directory as `name`; its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace sylva::test
