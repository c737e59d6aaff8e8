// A small CNN graph in the IOS JSON format, shared by the IOS tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/file.h"
#include "sylva/sched/ios_graph.h"

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

// Strided, depthwise and activated convolutions; max, average (padding
// counted) and global pooling; element-wise sum and product of terms.
inline const char* kCnnOpsGraph = R"({"name": "ops", "input": {"type": "placeholder", "name": "x", "output_shape": [6, 9, 9]},
 "blocks": [{"enter_node": {"type": "placeholder", "name": "x", "output_shape": [6, 9, 9]},
  "inner_nodes": [
   {"type": "conv", "name": "s2", "inputs": [[["x", 0, 6]]], "out_channels": 4, "kernel": [3, 3], "stride": [2, 2],
    "padding": [1, 1], "groups": 1, "act": "sigmoid", "output_shape": [4, 5, 5]},
   {"type": "conv", "name": "dw", "inputs": [[["x", 0, 6]]], "out_channels": 6, "kernel": [3, 3], "stride": [1, 1],
    "padding": [1, 1], "groups": 6, "act": "tanh", "output_shape": [6, 9, 9]},
   {"type": "conv", "name": "rect", "inputs": [[["x", 2, 6]]], "out_channels": 3, "kernel": [1, 5], "stride": [1, 1],
    "padding": [0, 2], "groups": 1, "act": "relu", "output_shape": [3, 9, 9]},
   {"type": "pool", "name": "mx", "inputs": [[["dw", 0, 6]]], "pool_type": "max", "kernel": [3, 3], "stride": [2, 2],
    "padding": [1, 1], "output_shape": [6, 5, 5]},
   {"type": "pool", "name": "av", "inputs": [[["rect", 0, 3]]], "pool_type": "avg", "kernel": [3, 3],
    "stride": [1, 1], "padding": [1, 1], "output_shape": [3, 9, 9]},
   {"type": "pool", "name": "ga", "inputs": [[["x", 0, 6], ["dw", 0, 6]]], "pool_type": "global_avg",
    "kernel": [1, 1], "stride": [1, 1], "padding": [0, 0], "output_shape": [6, 1, 1]},
   {"type": "pool", "name": "gm", "inputs": [[["mx", 0, 6]]], "pool_type": "global_max", "kernel": [1, 1],
    "stride": [1, 1], "padding": [0, 0], "output_shape": [6, 1, 1]},
   {"type": "element", "name": "ea", "op": "add", "inputs": [[["dw", 0, 3]], [["x", 3, 6]]], "output_shape": [3, 9, 9]},
   {"type": "element", "name": "em", "op": "mul", "inputs": [[["rect", 0, 3]], [["x", 0, 3], ["dw", 1, 4]]],
    "output_shape": [3, 9, 9]}],
  "exit_node": {"type": "identity", "name": "out", "inputs": [[["s2", 0, 4]], [["mx", 0, 6]]],
   "output_shape": [10, 5, 5]}}]})";

// n values uniform in [-1, 1).
template <class T>
std::vector<T> uniform(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<T> u(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = u(rng);
  return v;
}

// max |a - b| / max(|a|, |b|) over all elements; infinite if the sizes differ.
inline double max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max({scale, static_cast<double>(std::abs(a[i])), static_cast<double>(std::abs(b[i]))});
  }
  return diff / scale;
}

// Every operator of every block, sequential nodes' members included.
inline std::vector<std::string> all_names(const ios::CnnGraph& g) {
  std::vector<std::string> names;
  for (const ios::CnnBlock& b : g.blocks)
    for (const ios::CnnNode* n : b.ops()) {
      names.push_back(n->name);
      for (const ios::CnnNode& m : n->nodes) names.push_back(m.name);
    }
  return names;
}

}  // namespace sylva::test
