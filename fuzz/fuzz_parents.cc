// Parent-pointer arrays: one graph per line; cycles, self-parents and
// parents out of range are errors; what is accepted is a DAG whose
// children are all in range (checked here by Kahn's algorithm).
#include <vector>

#include "fuzz_util.h"
#include "sylva/train/readers.h"

namespace {

bool acyclic_in_range(const sylva::InputGraph& g) {
  const int32_t n = g.num_vertices();
  std::vector<int32_t> parents(static_cast<size_t>(n), 0), ready;
  for (int32_t v = 0; v < n; ++v)
    for (int32_t c : g.children(v)) {
      if (c < 0 || c >= n) return false;
      ++parents[static_cast<size_t>(c)];
    }
  for (int32_t v = 0; v < n; ++v)
    if (parents[static_cast<size_t>(v)] == 0) ready.push_back(v);
  int32_t seen = 0;
  while (!ready.empty()) {
    const int32_t v = ready.back();
    ready.pop_back();
    ++seen;
    for (int32_t c : g.children(v))
      if (--parents[static_cast<size_t>(c)] == 0) ready.push_back(c);
  }
  return seen == n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".parents");
  sylva::fuzz::only_sylva_errors([&] {
    for (const sylva::InputGraph& g : sylva::read_parent_arrays(path))
      if (!acyclic_in_range(g)) sylva::fuzz::finding("an accepted graph with a cycle or a child out of range");
  });
  return 0;
}
