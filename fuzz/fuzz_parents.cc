// Parent-pointer arrays: one graph per line; cycles, self-parents and
// parents out of range are errors; what is accepted is a valid forest.
#include "fuzz_util.h"
#include "sylva/runtime/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".parents");
  sylva::fuzz::only_sylva_errors([&] {
    for (const sylva::InputGraph& g : sylva::read_parent_arrays(path))
      for (int32_t v = 0; v < g.num_vertices(); ++v)
        for (int32_t c : g.children(v))
          if (c >= v) sylva::fuzz::finding("a child numbered after its parent (not a topological order)");
  });
  return 0;
}
