// GloVe-style text vectors: "word v1 v2 ...", one per line.
#include "fuzz_util.h"
#include "sylva/train/word_vectors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".vec");
  sylva::fuzz::only_sylva_errors([&] {
    const sylva::WordVectors wv = sylva::load_word_vectors(path);
    if (wv.values.size() != static_cast<size_t>(wv.vocab.size()) * static_cast<size_t>(wv.dim))
      sylva::fuzz::finding("values do not hold vocab x dim floats");
  });
  return 0;
}
