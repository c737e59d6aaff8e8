// Token files (PTB): one sequence per line, whitespace separated.
#include "fuzz_util.h"
#include "sylva/train/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".tokens");
  sylva::fuzz::only_sylva_errors([&] {
    for (const sylva::TokenChain& c : sylva::read_token_sequences(path))
      if (c.graph.num_vertices() != static_cast<int32_t>(c.tokens.size()) || c.tokens.empty())
        sylva::fuzz::finding("a chain whose vertices and tokens disagree");
  });
  return 0;
}
