// Timeloop v1 YAML for CoSA: the shared specs read, the example mapping
// and every golden Timeloop mapping written back byte for byte, and
// malformed input named precisely.
#include "sylva/sched/cosa_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/ios_fixture.h"
#include "support/test_util.h"

namespace sylva::cosa {
namespace {

// Two levels under the MACs: 4 registers (1 word each) and a 1-instance buffer; DRAM.
const char* kArch = R"(arch:
  arithmetic:
    instances: 4
    word-bits: 8
  storage:
  - name: Reg
    entries: 1
    instances: 4
    word-bits: 8
  - name: Buf
    entries: 64
    instances: 1
    word-bits: 8
  - name: DRAM
    technology: DRAM
    instances: 1
    word-bits: 8
    bandwidth: 4
)";

const char* kMapping = R"(mapping:
- factors: R=1 S=1 P=1 Q=1 C=2 K=1 N=1
  permutation: CRSPQKN
  target: Reg
  type: temporal
- factors: R=1 S=1 P=1 Q=1 C=1 K=4 N=1
  permutation: KRSPQCN
  target: Buf
  type: spatial
- factors: R=3 S=1 P=2 Q=1 C=1 K=1 N=1
  permutation: RPSQCKN
  target: Buf
  type: temporal
- factors: R=1 S=1 P=1 Q=1 C=1 K=1 N=2
  permutation: NRSPQCK
  target: DRAM
  type: temporal
- bypass:
  - Inputs
  - Outputs
  keep:
  - Weights
  target: Reg
  type: bypass
- bypass: []
  keep:
  - Weights
  - Inputs
  - Outputs
  target: Buf
  type: bypass
- bypass: []
  keep:
  - Weights
  - Inputs
  - Outputs
  target: DRAM
  type: bypass
)";

const char* kProblem = R"(problem:
  C: 2
  K: 4
  N: 2
  P: 2
  Q: 1
  R: 3
  S: 1
  Wstride: 1
  Hstride: 1
  shape: cnn-layer
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CosaSpec, ReadsAndWritesBackAMapping) {
  test::TempDir dir;
  const Arch a = read_arch(dir.file("arch.yaml", kArch));
  ASSERT_EQ(a.levels.size(), 3u);
  EXPECT_EQ(a.fanout(0), 1);
  EXPECT_EQ(a.fanout(1), 4);
  EXPECT_TRUE(a.levels[2].dram);
  EXPECT_EQ(a.levels[2].read_bandwidth, 4.0);
  const Problem p = read_problem(dir.file("p.yaml", kProblem));
  EXPECT_EQ(p.macs(), 3 * 2 * 2 * 4 * 2);
  const Mapping m = read_mapping(dir.file("m.yaml", kMapping), a);
  EXPECT_NO_THROW(check_mapping(m, p, a));
  EXPECT_EQ(m.levels[1].spatial[K], 4);
  EXPECT_EQ(m.levels[1].temporal_permutation, "RPSQCKN");
  EXPECT_FALSE(m.levels[0].keep[Inputs]);
  EXPECT_EQ(mapping_yaml(m), kMapping);
}

TEST(CosaSpec, MappingsThatDoNotFitAreErrors) {
  test::TempDir dir;
  const Arch a = read_arch(dir.file("arch.yaml", kArch));
  Problem p = read_problem(dir.file("p.yaml", kProblem));
  const Mapping m = parse_mapping(kMapping, a);
  p.bounds[P] = 4;
  EXPECT_CONTAINS(test::error_of([&] { check_mapping(m, p, a); }), "the factors of P multiply to 2, not its bound 4");
  p.bounds[P] = 2;
  Mapping wide = m;
  wide.levels[1].spatial[K] = 8;
  wide.levels[1].temporal[K] = 1;
  p.bounds[K] = 8;
  EXPECT_CONTAINS(test::error_of([&] { check_mapping(wide, p, a); }), "level Buf spreads over 8 instances but has a "
                                                                          "fan-out of 4");
}

TEST(CosaSpec, MalformedFilesNameWhatIsWrong) {
  test::TempDir dir;
  const Arch a = read_arch(dir.file("arch.yaml", kArch));
  const auto mapping_error = [&](const std::string& from, const std::string& to) {
    std::string text = kMapping;
    text.replace(text.find(from), from.size(), to);
    return test::error_of([&] { parse_mapping(text, a, "m.yaml"); });
  };
  EXPECT_CONTAINS(mapping_error("C=2 K=1", "C=x K=1"), "factor 'C=x' is not a positive integer");
  EXPECT_CONTAINS(mapping_error("C=2 K=1", "C=2 Z=1"), "unknown dimension 'Z'");
  EXPECT_CONTAINS(mapping_error("C=2 K=1", "C=2"), "no factor for K");
  EXPECT_CONTAINS(mapping_error("CRSPQKN", "CRSPQKK"), "is not an ordering of RSPQCKN");
  EXPECT_CONTAINS(mapping_error("target: Reg\n  type: temporal", "target: L9\n  type: temporal"), "no storage level 'L9'");
  EXPECT_CONTAINS(mapping_error("type: spatial", "type: sideways"), "type must be temporal, spatial or bypass");
  EXPECT_CONTAINS(mapping_error("- Outputs\n  keep", "- Biases\n  keep"), "unknown tensor 'Biases'");
  EXPECT_CONTAINS(test::error_of([&] { parse_mapping("mapping: [a, {", a, "m.yaml"); }), "m.yaml: malformed YAML");
  EXPECT_CONTAINS(test::error_of([&] { read_problem(dir.file("p.yaml", "problem:\n  R: 3\n")); }), "missing 'S'");
  EXPECT_CONTAINS(test::error_of([&] { read_problem(dir.file("p.yaml", "layer:\n  R: 3\n")); }), "no 'problem' section");
  std::string zero_stride = kProblem;
  zero_stride.replace(zero_stride.find("Hstride: 1"), 10, "Hstride: 0");
  EXPECT_CONTAINS(test::error_of([&] { read_problem(dir.file("p.yaml", zero_stride)); }), "must be >= 1");
  EXPECT_CONTAINS(test::error_of([&] { read_problem(dir.file("p.yaml", "problem:\n  R: three\n")); }),
                  "'R' is not an integer");
  EXPECT_CONTAINS(test::error_of([&] { read_arch((dir.path / "none.yaml").string()); }), "no such file");
  std::string bad_arch = kArch;
  bad_arch.replace(bad_arch.find("instances: 1\n    word-bits: 8\n  - name: DRAM"), 12, "instances: 3");
  EXPECT_CONTAINS(test::error_of([&] { read_arch(dir.file("bad.yaml", bad_arch)); }), "level Buf has 3 instances");
}

// The shared specs, the example mapping and every mapping of the golden
// Timeloop set: read, checked against their layer, written back identically.
TEST(CosaSpecData, SharedSpecsAndGoldenMappingsRoundTrip) {
  const std::string data = test::data_dir();
  const std::string cosa = data + "/cosa";
  if (data.empty() || !std::filesystem::exists(cosa)) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  const Arch simba = read_arch(cosa + "/arch/simba.yaml");
  std::vector<int64_t> fan;
  for (int i = 0; i < static_cast<int>(simba.levels.size()); ++i) fan.push_back(simba.fanout(i));
  EXPECT_EQ(fan, (std::vector<int64_t>{1, 8, 1, 8, 16, 1}));
  const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", simba);
  EXPECT_TRUE(ms.keep[0][Weights] && !ms.keep[0][Inputs] && !ms.keep[0][Outputs]);
  EXPECT_TRUE(!ms.keep[4][Weights] && ms.keep[4][Inputs] && ms.keep[4][Outputs]);
  EXPECT_TRUE(ms.keep[5][Weights] && ms.keep[5][Inputs] && ms.keep[5][Outputs]);
  const Arch bw20 = read_arch(cosa + "/examples/simba_bw20.yaml");
  EXPECT_EQ(bw20.levels.back().read_bandwidth, 20.0);
  const std::string example = cosa + "/examples/resnet50_input5_map.yaml";
  const Problem p5 = read_problem(cosa + "/workloads/resnet50/_outputs_input.5.yaml");
  const Mapping m = read_mapping(example, simba);
  EXPECT_NO_THROW(check_mapping(m, p5, simba));
  EXPECT_EQ(mapping_yaml(m), read_text(example));
  int checked = 0;
  for (const auto& f : std::filesystem::directory_iterator(cosa + "/timeloop_golden")) {
    if (f.path().extension() != ".json") continue;
    const nlohmann::json j = nlohmann::json::parse(read_text(f.path().string()));
    const Problem p = read_problem(cosa + "/workloads/resnet50/" + j["layer"].get<std::string>());
    for (const nlohmann::json& rec : j["mappings"]) {
      const std::string text = rec["mapping_yaml"].get<std::string>();
      const Mapping g = parse_mapping(text, bw20, f.path().filename().string());
      EXPECT_NO_THROW(check_mapping(g, p, bw20)) << f.path();
      EXPECT_EQ(mapping_yaml(g), text) << f.path();
      ++checked;
    }
  }
  EXPECT_GE(checked, 200);
}

TEST(CosaSpec, LayerListsNameTheirMissingFiles) {
  test::TempDir dir;
  dir.file("a.yaml", "problem: {}\n");
  EXPECT_EQ(read_layer_list(dir.file("net.yaml", "- a\n")).size(), 1u);
  EXPECT_CONTAINS(test::error_of([&] { read_layer_list(dir.file("bad.yaml", "- a\n- b\n")); }), "line 2: no layer file");
  EXPECT_CONTAINS(test::error_of([&] { read_layer_list(dir.file("map.yaml", "a: 1\n")); }), "expected a list");
}

}  // namespace
}  // namespace sylva::cosa
