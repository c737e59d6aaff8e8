// The analytical mapping model: tiles and traffic on a hand-computed case,
// capacity violations, and cycles against real Timeloop on the golden set.
#include "sylva/sched/cosa_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"

namespace sylva::cosa {
namespace {

// 4 MACs under 4 one-word registers (Weights only), a 64-word buffer
// (Inputs and Outputs), DRAM at 2 words per cycle.
const std::string kArch = test::tiny_cosa_arch(64);

// P=4 Q=1 C=2 K=4 R=3 (stride 1): weights 24 words, inputs 2 x 6 = 12, outputs 16.
const char* kProblem = "problem:\n  R: 3\n  S: 1\n  P: 4\n  Q: 1\n  C: 2\n  K: 4\n  N: 1\n";

Mapping mapping(const Arch& a) {
  Mapspace ms;
  ms.keep = {{true, false, false}, {false, true, true}, {true, true, true}};
  Mapping m = blank_mapping(a, ms);
  m.levels[1].spatial[K] = 4;  // each register holds one K's weight
  m.levels[1].has_spatial = true;
  m.levels[1].temporal[P] = 4;  // innermost at Buf: P (irrelevant to Weights), then R, C
  m.levels[1].temporal[R] = 3;
  m.levels[1].temporal[C] = 2;
  m.levels[1].temporal_permutation = "PRCSQKN";
  return m;
}

TEST(CosaModel, TilesTrafficAndCyclesByHand) {
  test::TempDir dir;
  const Arch a = read_arch(dir.file("a.yaml", kArch));
  const Problem p = read_problem(dir.file("p.yaml", kProblem));
  const Evaluation e = evaluate(mapping(a), p, a);
  ASSERT_TRUE(e.valid) << e.why;
  EXPECT_EQ(e.tile[0][Weights], 1);
  EXPECT_EQ(e.tile[1][Inputs], 2 * 6);   // C=2, width (4-1) + (3-1) + 1
  EXPECT_EQ(e.tile[1][Outputs], 4 * 4);  // P=4, K=4
  // Inputs and Outputs live in Buf for the whole layer: read once, written once.
  EXPECT_EQ(e.dram_reads[Inputs], 12);
  EXPECT_EQ(e.dram_updates, 16);
  EXPECT_EQ(e.dram_reads[Outputs], 0);
  // Weights bypass Buf: each register is refilled per (R, C) step, not per P step
  // (P is innermost and does not index weights): 6 fills x 4 registers.
  EXPECT_EQ(e.dram_reads[Weights], 24);
  EXPECT_EQ(e.compute_cycles, 4 * 3 * 2);
  EXPECT_EQ(e.cycles, 24);  // compute-bound: DRAM needs (24 + 12) / 2 = 18 cycles to read, 16 / 2 to write
  // With P outermost instead, weights are refetched for every P: 4x the traffic.
  Mapping outer = mapping(a);
  outer.levels[1].temporal_permutation = "RCPSQKN";
  EXPECT_EQ(evaluate(outer, p, a).dram_reads[Weights], 4 * 24);
}

// An on-chip level that states a bandwidth bounds the cycles like DRAM's:
// Buf serves reads of Inputs (24) and Outputs (80) and takes fills of
// Inputs (12) and updates of Outputs (96), per the accesses below.
TEST(CosaModel, OnChipBandwidthBoundsTheCycles) {
  test::TempDir dir;
  const auto with_buf = [&](const std::string& name, const std::string& bandwidths) {
    std::string arch = kArch;
    const std::string anchor = "    entries: 64\n";
    arch.insert(arch.find(anchor) + anchor.size(), bandwidths);
    return read_arch(dir.file(name, arch));
  };
  const Problem p = read_problem(dir.file("p.yaml", kProblem));
  const Arch reads = with_buf("r.yaml", "    read_bandwidth: 2\n    write_bandwidth: 8\n");
  EXPECT_EQ(evaluate(mapping(reads), p, reads).cycles, (24 + 80) / 2);
  const Arch writes = with_buf("w.yaml", "    read_bandwidth: 8\n    write_bandwidth: 2\n");
  EXPECT_EQ(evaluate(mapping(writes), p, writes).cycles, (12 + 96) / 2);
  const Arch fast = with_buf("f.yaml", "    read_bandwidth: 100\n    write_bandwidth: 100\n");
  EXPECT_EQ(evaluate(mapping(fast), p, fast).cycles, 24);  // compute-bound again
}

// Per-instance accesses and energy of the same mapping, worked by hand with
// given per-access energies (MAC 0.5 pJ, Reg 1, Buf 2, DRAM 10).
TEST(CosaModel, AccessesAndEnergyByHand) {
  test::TempDir dir;
  std::string arch = kArch;
  const auto after = [&](const std::string& anchor, const std::string& line) {
    const size_t at = arch.find(anchor);
    ASSERT_NE(at, std::string::npos) << anchor;
    arch.insert(at + anchor.size(), line);
  };
  after("    instances: 4\n", "    energy: 0.5\n");  // arithmetic
  after("    entries: 1\n", "    vector-access-energy: 1\n");
  after("    entries: 64\n", "    vector-access-energy: 2\n");
  arch += "    vector-access-energy: 10\n";
  const Arch a = read_arch(dir.file("a.yaml", arch));
  ASSERT_EQ(a.mac_energy, 0.5);
  const Problem p = read_problem(dir.file("p.yaml", kProblem));
  const Evaluation e = evaluate(mapping(a), p, a);
  ASSERT_TRUE(e.valid) << e.why;
  const auto& reg = e.accesses[0][Weights];
  EXPECT_EQ(reg.instances, 4);  // Buf's spatial K = 4
  EXPECT_EQ(reg.fills, 6);      // one weight per (R, C) step
  EXPECT_EQ(reg.reads, 96 / 4);  // 96 MACs over 4 registers
  const auto& in = e.accesses[1][Inputs];
  EXPECT_EQ(in.reads, 96 / 4);  // the 4 K lanes share each input read (multicast)
  EXPECT_EQ(in.fills, 12);
  const auto& out = e.accesses[1][Outputs];
  EXPECT_EQ(out.updates, 96);      // every MAC's partial sum
  EXPECT_EQ(out.reads, 96 - 16);   // read back for accumulation, except each output's first write
  EXPECT_EQ(out.fills, 0);         // never evicted
  EXPECT_EQ(e.accesses[2][Weights].reads, 24);
  EXPECT_EQ(e.accesses[2][Outputs].updates, 16);
  // 96 x 0.5 + Reg (24 + 6) x 4 x 1 + Buf (24 + 12 + 96 + 80) x 2 + DRAM (24 + 12 + 16) x 10
  EXPECT_DOUBLE_EQ(e.energy_pj, 48 + 120 + 424 + 520);
  // Registers in one cluster of 4: one access serves all four.
  after("    vector-access-energy: 1\n", "    cluster-size: 4\n");
  const Arch clustered = read_arch(dir.file("c.yaml", arch));
  EXPECT_DOUBLE_EQ(evaluate(mapping(clustered), p, clustered).energy_pj, 48 + 30 + 424 + 520);
  // Without per-access energies for a level's shape, energy is unknown.
  const Arch plain = read_arch(dir.file("plain.yaml", kArch));
  EXPECT_TRUE(std::isnan(evaluate(mapping(plain), p, plain).energy_pj));
}

TEST(CosaModel, OverfullBuffersAreInvalid) {
  test::TempDir dir;
  std::string small = kArch;
  small.replace(small.find("entries: 64"), 11, "entries: 20");
  const Arch a = read_arch(dir.file("a.yaml", small));
  const Evaluation e = evaluate(mapping(a), read_problem(dir.file("p.yaml", kProblem)), a);
  EXPECT_FALSE(e.valid);
  EXPECT_CONTAINS(e.why, "level Buf holds tiles of 28 words but has 20 entries");
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2.0);
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> a = ranks(x), b = ranks(y);
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(b.size());
  double num = 0, da = 0, db = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ma) * (b[i] - mb);
    da += (a[i] - ma) * (a[i] - ma);
    db += (b[i] - mb) * (b[i] - mb);
  }
  return num / std::sqrt(da * db);
}

// Real Timeloop v3.0.3 on 8 ResNet-50 layers x 26 mappings (the golden set).
// Cycles, per level and tensor access counts, and energy against real
// Timeloop v3.0.3 (the golden set's 8 ResNet-50 layers x 26 mappings).
TEST(CosaModelData, AgreesWithTimeloop) {
  const std::string data = test::data_dir();
  const std::string golden = data + "/cosa/timeloop_golden";
  if (data.empty() || !std::filesystem::exists(golden)) GTEST_SKIP() << "no Timeloop golden set: set SYLVA_DATA";
  const Arch a = read_arch(data + "/cosa/examples/simba_bw20.yaml");
  std::vector<double> ours, theirs, our_energy, their_energy;
  int exact = 0, capacity_refused = 0, capacity_examples = 0, counts = 0, counts_exact = 0;
  double worst = 0, sum_err = 0, energy_err = 0, energy_worst = 0;
  for (const auto& f : std::filesystem::directory_iterator(golden)) {
    if (f.path().extension() != ".json") continue;
    std::ifstream in(f.path());
    const nlohmann::json j = nlohmann::json::parse(in);
    const Problem p = read_problem(data + "/cosa/workloads/resnet50/" + j["layer"].get<std::string>());
    for (const nlohmann::json& rec : j["mappings"]) {
      const Evaluation e = evaluate(parse_mapping(rec["mapping_yaml"].get<std::string>(), a), p, a);
      EXPECT_TRUE(e.valid) << f.path() << ": " << e.why;  // Timeloop accepted every one
      const auto tl = rec["cycles"].get<int64_t>();
      ours.push_back(static_cast<double>(e.cycles));
      theirs.push_back(static_cast<double>(tl));
      exact += e.cycles == tl;
      const double err = std::abs(static_cast<double>(e.cycles - tl)) / static_cast<double>(tl);
      worst = std::max(worst, err);
      sum_err += err;
      for (const auto& [level, tensors] : rec["accesses"].items()) {
        const int i = a.level(level);
        for (const auto& [tensor, tl_acc] : tensors.items()) {
          int t = 0;
          while (tensor_name(t) != tensor) ++t;
          const Accesses& acc = e.accesses[static_cast<size_t>(i)][t];
          ++counts;
          counts_exact += acc.reads == tl_acc["reads"].get<int64_t>() && acc.fills == tl_acc["fills"].get<int64_t>() &&
                          acc.updates == tl_acc["updates"].get<int64_t>() &&
                          acc.instances == tl_acc["utilized_instances"].get<int64_t>();
        }
      }
      const auto tl_energy = rec["energy_pj"].get<double>();
      our_energy.push_back(e.energy_pj);
      their_energy.push_back(tl_energy);
      const double eerr = std::abs(e.energy_pj - tl_energy) / tl_energy;
      energy_err += eerr;
      energy_worst = std::max(energy_worst, eerr);
    }
    for (const nlohmann::json& bad : j["invalid_examples"]) {
      if (bad["error"].get<std::string>().find("exceeds buffer capacity") == std::string::npos) continue;
      ++capacity_examples;
      const Mapping m = parse_mapping(bad["mapping_yaml"].get<std::string>(), a);
      capacity_refused += !evaluate(m, p, a).valid;
    }
  }
  ASSERT_GE(ours.size(), 200u);
  const double rho = spearman(ours, theirs), mean_err = sum_err / static_cast<double>(ours.size());
  std::printf("[cosa model vs Timeloop] %zu mappings: %d exact, Spearman %.4f, mean |error| %.3f%%, worst %.1f%%; "
              "%d/%d capacity violations refused\n",
              ours.size(), exact, rho, 100 * mean_err, 100 * worst, capacity_refused, capacity_examples);
  // What README and docs/architecture.md claim, asserted as claimed.
  EXPECT_EQ(ours.size(), 208u);
  EXPECT_GE(exact, 206) << "README: 206 of the 208 golden mappings' cycle counts exact";
  EXPECT_GE(rho, 0.9999);
  EXPECT_LE(mean_err, 0.0001);
  EXPECT_EQ(capacity_refused, capacity_examples);
  const double energy_rho = spearman(our_energy, their_energy);
  const double energy_mean = energy_err / static_cast<double>(our_energy.size());
  std::printf("[cosa model vs Timeloop] access counts: %d/%d (level, tensor) records exact; energy: Spearman %.4f, "
              "mean |error| %.4f%%, worst %.1f%%\n",
              counts_exact, counts, energy_rho, 100 * energy_mean, 100 * energy_worst);
  EXPECT_GE(energy_rho, 0.9999);
  EXPECT_LT(energy_mean, 0.00035) << "README: energy within 0.03% of Timeloop's on average";
  EXPECT_GE(counts_exact, 1852) << "docs/architecture.md: 1852 of the 1872 access records exact";
}

}  // namespace
}  // namespace sylva::cosa
