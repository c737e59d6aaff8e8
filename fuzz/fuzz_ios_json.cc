// IOS CNN graphs (JSON): read, or a sylva::Error naming what is wrong.
#include "fuzz_util.h"
#include "sylva/sched/ios_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".json");
  sylva::fuzz::only_sylva_errors([&] { (void)sylva::ios::read_ios_graph(path); });
  return 0;
}
