// safetensors checkpoints into a fixed parameter set (W [2, 3], b [3],
// float32): a file loads or is a sylva::Error before any large allocation;
// what loads saves to bytes that load and save again byte-identical.
#include <cstring>

#include "fuzz_util.h"
#include "sylva/core/file.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/train/checkpoint.h"

namespace {

void fill(sylva::ParameterSet& ps) {
  ps.add("W", {2, 3}, sylva::Init::zeros());
  ps.add("b", {3}, sylva::Init::zeros());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".safetensors");
  sylva::fuzz::only_sylva_errors([&] {
    sylva::ParameterSet ps(sylva::DType::f32, 1);
    fill(ps);
    const auto metadata = sylva::load_checkpoint(ps, path);
    const std::string a_path = path + ".a", b_path = path + ".b";
    sylva::save_checkpoint(ps, a_path, metadata);
    sylva::ParameterSet again(sylva::DType::f32, 1);
    fill(again);
    const auto metadata_again = sylva::load_checkpoint(again, a_path);
    sylva::save_checkpoint(again, b_path, metadata_again);
    if (sylva::read_file(a_path) != sylva::read_file(b_path))
      sylva::fuzz::finding("save -> load -> save is not byte-identical");
    for (const char* name : {"W", "b"})
      if (std::memcmp(ps[name].value.raw(), again[name].value.raw(), ps[name].value.nbytes()) != 0)
        sylva::fuzz::finding(std::string("tensor ") + name + " changed in the round trip");
  });
  return 0;
}
