// Shared by the fuzz harnesses: what counts as a finding, and the input as
// a file for the readers that take a path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sylva/core/error.h"

namespace sylva::fuzz {

/// Runs f on one input. A sylva::Error is a proper rejection (printed when
/// SYLVA_FUZZ_VERBOSE is set, to see what a corpus exercises); any other
/// exception (std::bad_alloc, a yaml-cpp or JSON exception, std::out_of_range)
/// is a finding: it aborts, so libFuzzer keeps the input.
template <class F>
void only_sylva_errors(F&& f) {
  try {
    f();
    if (std::getenv("SYLVA_FUZZ_VERBOSE")) std::fprintf(stderr, "fuzz: accepted\n");
  } catch (const Error& e) {
    if (std::getenv("SYLVA_FUZZ_VERBOSE")) std::fprintf(stderr, "fuzz: rejected: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a sylva::Error: %s\n", e.what());
    std::abort();
  }
}

/// An oracle failed: a round trip changed what it should keep.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

/// The input written to this process's scratch file (rewritten per call).
inline std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sylva_fuzz_" + std::to_string(::getpid()) + suffix)).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) finding("cannot write " + path);
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace sylva::fuzz
