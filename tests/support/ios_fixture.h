// A small CNN graph in the IOS JSON format, shared by the IOS tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "sylva/core/file.h"

namespace sylva::test {

// input 0 -> block 0: enter "1" (conv of 0); inner a, b (convs of 1), c =
// concat(a, b + slice of 1), sequential s (relu then conv) of c; exit "e"
// concatenates c and s.
inline const char* kTinyCnnGraph = R"({"name": "tiny", "input": {"type": "placeholder", "name": "0", "output_shape": [3, 8, 8]},
 "blocks": [{"enter_node": {"type": "conv", "name": "1", "inputs": [[["0", 0, 3]]], "out_channels": 4,
   "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "groups": 1, "act": "relu", "output_shape": [4, 8, 8]},
  "inner_nodes": [
   {"type": "conv", "name": "a", "inputs": [[["1", 0, 4]]], "out_channels": 2, "kernel": [1, 1], "stride": [1, 1],
    "padding": [0, 0], "groups": 1, "act": "relu", "output_shape": [2, 8, 8]},
   {"type": "conv", "name": "b", "inputs": [[["1", 0, 4]]], "out_channels": 2, "kernel": [3, 3], "stride": [1, 1],
    "padding": [1, 1], "groups": 1, "act": "relu", "output_shape": [2, 8, 8]},
   {"type": "identity", "name": "c", "inputs": [[["a", 0, 2]], [["b", 0, 2], ["1", 2, 4]]], "output_shape": [4, 8, 8]},
   {"type": "sequential", "name": "s", "nodes": [
     {"type": "relu", "name": "s1", "inputs": [[["c", 0, 4]]], "output_shape": [4, 8, 8]},
     {"type": "conv", "name": "s2", "inputs": [[["s1", 0, 4]]], "out_channels": 4, "kernel": [1, 1],
      "stride": [1, 1], "padding": [0, 0], "groups": 2, "act": "identity", "output_shape": [4, 8, 8]}],
    "output_shape": [4, 8, 8]}],
  "exit_node": {"type": "identity", "name": "e", "inputs": [[["c", 0, 4]], [["s", 0, 4]]], "output_shape": [8, 8, 8]},
  "stages": [[["a"]], [["b"]], [["c"]], [["s"]], [["e"]]]}]})";

// A directory for the current test's files, removed afterwards.
struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                  ("sylva_ios_" + std::to_string(::getpid()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    write_file_atomically(p, text);
    return p;
  }
};

}  // namespace sylva::test
