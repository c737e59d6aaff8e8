// Timeloop YAML (CoSA): the first byte picks the reader -- layer problem,
// architecture, mapspace or mapping (against a fixed architecture); the
// rest is the file. A mapping that reads writes back to YAML that reads to
// the same YAML again.
#include <string>

#include "fuzz_util.h"
#include "support/cosa_fixture.h"
#include "sylva/sched/cosa_spec.h"

namespace {

const sylva::cosa::Arch& arch() {
  static const sylva::cosa::Arch a = [] {
    const std::string text = sylva::test::tiny_cosa_arch(64);  // the CoSA tests' architecture
    return sylva::cosa::read_arch(
        sylva::fuzz::as_file(reinterpret_cast<const uint8_t*>(text.data()), text.size(), ".arch.yaml"));
  }();
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 4;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const sylva::cosa::Arch& a = arch();
  sylva::fuzz::only_sylva_errors([&] {
    switch (which) {
      case 0: (void)sylva::cosa::read_problem(sylva::fuzz::as_file(data + 1, size - 1, ".problem.yaml")); break;
      case 1: (void)sylva::cosa::read_arch(sylva::fuzz::as_file(data + 1, size - 1, ".arch-in.yaml")); break;
      case 2: (void)sylva::cosa::read_mapspace(sylva::fuzz::as_file(data + 1, size - 1, ".mapspace.yaml"), a); break;
      default: {
        const std::string once = sylva::cosa::mapping_yaml(sylva::cosa::parse_mapping(text, a, "fuzz"));
        std::string twice;
        try {
          twice = sylva::cosa::mapping_yaml(sylva::cosa::parse_mapping(once, a, "round trip"));
        } catch (const sylva::Error& e) {
          sylva::fuzz::finding("a written mapping does not read back: " + std::string(e.what()));
        }
        if (once != twice) sylva::fuzz::finding("mapping YAML write -> read -> write changed:\n" + once + "\n" + twice);
      }
    }
  });
  return 0;
}
