// A tiny Timeloop-style architecture shared by the CoSA tests: 4 MACs under
// 4 one-word registers, one buffer of `buffer_entries` words, DRAM at 2
// words per cycle.
#pragma once

#include <string>

namespace sylva::test {

inline std::string tiny_cosa_arch(int buffer_entries) {
  return R"(arch:
  arithmetic:
    instances: 4
  storage:
  - name: Reg
    entries: 1
    instances: 4
  - name: Buf
    entries: )" + std::to_string(buffer_entries) + R"(
    instances: 1
  - name: DRAM
    technology: DRAM
    instances: 1
    bandwidth: 2
)";
}

}  // namespace sylva::test
