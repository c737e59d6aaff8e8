// CNN kernels with CoSA-scheduled convolutions: every layer against the
// reference convolution (padding, strides, strides that leave input rows
// unread, bias, activations), the `pick` mode's measured choice and its
// fallback on grouped convolutions, and whole graphs through CnnRunner.
#include "sylva/graph/cnn_cosa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {
namespace {

struct Case {
  int64_t n, c, h, w, k, kh, kw, stride, pad;
  Act act;
};

ConvSpec spec_of(const Case& t, const std::string& key) {
  ConvSpec c;
  c.key = key;
  c.out_channels = t.k;
  c.kernel = {t.kh, t.kw};
  c.stride = {t.stride, t.stride};
  c.padding = {t.pad, t.pad};
  c.out_h = (t.h + 2 * t.pad - t.kh) / t.stride + 1;
  c.out_w = (t.w + 2 * t.pad - t.kw) / t.stride + 1;
  c.act = t.act;
  return c;
}

// Runs case `t` through `k` (twice: the first call plans, the second runs
// the plan) and returns the worst relative error against conv_reference.
double worst_error(CosaCnnKernels& k, const Case& t, const std::string& key, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const ConvSpec c = spec_of(t, key);
  const std::vector<float> x = test::uniform<float>(static_cast<size_t>(t.n * t.c * t.h * t.w), rng);
  const std::vector<float> w = test::uniform<float>(static_cast<size_t>(t.k * t.c * t.kh * t.kw), rng);
  const std::vector<float> b = test::uniform<float>(static_cast<size_t>(t.k), rng);
  std::vector<float> want;
  conv_reference(c, x, t.n, t.c, t.h, t.w, w, b, want);
  double worst = 0;
  for (int call = 0; call < 2; ++call) {
    std::vector<float> got(want.size(), NAN);
    k.conv(c, x.data(), {t.n, t.c, t.h, t.w}, w.data(), b.data(), got.data());
    worst = std::max(worst, test::max_relative_error(got, want));
  }
  return worst;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {1, 3, 8, 8, 4, 3, 3, 1, 1, Act::relu},      // padded
      {2, 5, 9, 9, 7, 3, 3, 2, 1, Act::sigmoid},   // strided, padded, odd sizes
      {1, 4, 10, 10, 6, 3, 3, 2, 0, Act::tanh},    // stride 2 leaves the last input row unread
      {1, 16, 6, 7, 24, 1, 1, 1, 0, Act::identity},  // 1x1, read in place
      {1, 6, 9, 9, 3, 1, 5, 1, 2, Act::relu},      // rectangular kernel
  };
  return all;
}

TEST(CnnCosa, ConvProblemOfASpec) {
  const Case t{2, 5, 9, 11, 7, 3, 1, 2, 1, Act::relu};
  const cosa::Problem p = conv_problem(spec_of(t, "L"), {2, 5, 9, 11});
  EXPECT_EQ(p.bounds[cosa::N], 2);
  EXPECT_EQ(p.bounds[cosa::C], 5);
  EXPECT_EQ(p.bounds[cosa::K], 7);
  EXPECT_EQ(p.bounds[cosa::R], 3);
  EXPECT_EQ(p.bounds[cosa::S], 1);
  EXPECT_EQ(p.bounds[cosa::P], 5);  // (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(p.bounds[cosa::Q], 7);  // (11 + 2 - 1) / 2 + 1
  EXPECT_EQ(p.w_stride, 2);
  ConvSpec grouped = spec_of(t, "dw3");
  grouped.groups = 5;
  EXPECT_CONTAINS(test::error_of([&] { conv_problem(grouped, {2, 5, 9, 11}); }), "conv 'dw3': groups = 5");
}

TEST(CnnCosa, EveryLayerMatchesTheReference) {
  CosaCnnKernels k(CosaCnnKernels::Mode::cosa, cosa::cpu_arch(test::two_core_facts()));
  for (size_t i = 0; i < cases().size(); ++i)
    EXPECT_LE(worst_error(k, cases()[i], "c" + std::to_string(i), 100 + i), 1e-5) << "case " << i;
  const std::vector<ConvDecision> d = k.decisions();
  ASSERT_EQ(d.size(), cases().size());
  for (const ConvDecision& x : d) {
    EXPECT_TRUE(x.cosa) << x.line();
    EXPECT_GT(x.solve_seconds, 0) << x.line();
  }
}

TEST(CnnCosa, PickMeasuresBothAndKeepsTheFaster) {
  CosaCnnKernels k(CosaCnnKernels::Mode::pick, cosa::cpu_arch(test::two_core_facts()));
  for (size_t i = 0; i < cases().size(); ++i)
    EXPECT_LE(worst_error(k, cases()[i], "c" + std::to_string(i), 200 + i), 1e-5) << "case " << i;
  for (const ConvDecision& x : k.decisions()) {
    EXPECT_GT(x.cosa_ms, 0) << x.line();
    EXPECT_GT(x.onednn_ms, 0) << x.line();
    EXPECT_EQ(x.cosa, x.cosa_ms < x.onednn_ms) << x.line();
    EXPECT_CONTAINS(x.line(), "conv " + x.key + ": ");
  }
}

TEST(CnnCosa, GroupedConvolutionsFallBackInPickAndThrowInCosa) {
  Case t{1, 6, 9, 9, 6, 3, 3, 1, 1, Act::tanh};
  ConvSpec c = spec_of(t, "dw");
  c.groups = 6;
  std::mt19937_64 rng(5);
  const std::vector<float> x = test::uniform<float>(6 * 81, rng), w = test::uniform<float>(6 * 9, rng), b = test::uniform<float>(6, rng);
  std::vector<float> want, got(6 * 81);
  conv_reference(c, x, 1, 6, 9, 9, w, b, want);
  CosaCnnKernels pick(CosaCnnKernels::Mode::pick, cosa::cpu_arch(test::two_core_facts()));
  pick.conv(c, x.data(), {1, 6, 9, 9}, w.data(), b.data(), got.data());
  EXPECT_LE(test::max_relative_error(got, want), 1e-5);
  ASSERT_EQ(pick.decisions().size(), 1u);
  EXPECT_FALSE(pick.decisions()[0].cosa);
  EXPECT_CONTAINS(pick.decisions()[0].line(), "conv dw: onednn, fell back: [cnn cosa] conv 'dw': groups = 6");
  CosaCnnKernels all(CosaCnnKernels::Mode::cosa, cosa::cpu_arch(test::two_core_facts()));
  EXPECT_CONTAINS(test::error_of([&] { all.conv(c, x.data(), {1, 6, 9, 9}, w.data(), b.data(), got.data()); }),
                  "conv 'dw': groups = 6");
  EXPECT_TRUE(all.decisions().empty());  // nothing kept: the next call throws again
}

TEST(CnnCosa, ALayerKeyWithAnotherInputSizeIsAnError) {
  CosaCnnKernels k(CosaCnnKernels::Mode::cosa, cosa::cpu_arch(test::two_core_facts()));
  const Case t = cases()[0];
  EXPECT_LE(worst_error(k, t, "L", 1), 1e-5);
  std::vector<float> x(2 * 3 * 64), w(4 * 3 * 9), b(4), y(2 * 4 * 64);
  const ConvSpec c = spec_of(t, "L");
  EXPECT_CONTAINS(test::error_of([&] { k.conv(c, x.data(), {2, 3, 8, 8}, w.data(), b.data(), y.data()); }),
                  "conv 'L' was planned for input [1, 3, 8, 8], called with [2, 3, 8, 8]");
}

std::vector<std::string> data_lines(const std::string& path) {
  std::vector<std::string> out;
  const std::string text = read_file(path);
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    if (text[at] != '#') out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The pick cache: a first run measures and writes it; a second run with
// the choices flipped in the file obeys the file without measuring (both
// kernels still give the reference's numbers); another machine's line
// survives rewrites; malformed files name the file and line.
TEST(CnnCosa, PickCacheKeepsTheMeasuredChoiceAcrossRuns) {
  test::TempDir dir;
  const std::string cache = (dir.path / "pick.tsv").string();
  const cosa::Arch arch = cosa::cpu_arch(test::two_core_facts());
  std::vector<ConvDecision> first;
  {
    CosaCnnKernels k(CosaCnnKernels::Mode::pick, arch, cache);
    EXPECT_LE(worst_error(k, cases()[0], "c0", 1), 1e-5);
    EXPECT_LE(worst_error(k, cases()[3], "c3", 2), 1e-5);
    first = k.decisions();
  }
  ASSERT_EQ(first.size(), 2u);
  for (const ConvDecision& d : first) EXPECT_EQ(d.reason, "measured") << d.line();
  std::vector<std::string> lines = data_lines(cache);
  ASSERT_EQ(lines.size(), 2u);
  std::string flipped = "# flipped by the test\nother-machine\tc0\t1x3x8x8\tcosa\t1\t2\n";
  for (std::string line : lines) {
    const size_t at = line.find("\tcosa\t") != std::string::npos ? line.find("\tcosa\t") : line.find("\tonednn\t");
    ASSERT_NE(at, std::string::npos) << line;
    line.replace(at, line.find('\t', at + 1) - at, line.compare(at, 6, "\tcosa\t") == 0 ? "\tonednn" : "\tcosa");
    flipped += line + '\n';
  }
  write_file_atomically(cache, flipped);
  {
    CosaCnnKernels k(CosaCnnKernels::Mode::pick, arch, cache);
    EXPECT_LE(worst_error(k, cases()[0], "c0", 3), 1e-5);
    EXPECT_LE(worst_error(k, cases()[3], "c3", 4), 1e-5);
    const std::vector<ConvDecision> again = k.decisions();
    ASSERT_EQ(again.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(again[i].reason, "cached") << again[i].line();
      EXPECT_EQ(again[i].cosa, !first[i].cosa) << again[i].line();
      EXPECT_NEAR(again[i].cosa_ms, first[i].cosa_ms, 1e-5 * first[i].cosa_ms);
      EXPECT_NEAR(again[i].onednn_ms, first[i].onednn_ms, 1e-5 * first[i].onednn_ms);
    }
    EXPECT_EQ(data_lines(cache).size(), 3u);  // nothing measured, nothing written
    EXPECT_LE(worst_error(k, cases()[1], "c1", 5), 1e-5);  // a new layer is measured and added
    EXPECT_EQ(k.decisions().back().reason, "measured");
  }
  lines = data_lines(cache);
  EXPECT_EQ(lines.size(), 4u);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "other-machine\tc0\t1x3x8x8\tcosa\t1\t2"), lines.end());

  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"# ok\na\tb\n", "line 2: 2 tab-separated fields, wanted 6"},
           {"m\tk\ts\tmaybe\t1\t2\n", "line 1: the choice is cosa or onednn, got 'maybe'"},
           {"m\tk\ts\tcosa\tfast\t2\n", "line 1: a time in ms is a finite number >= 0, got 'fast'"}}) {
    const std::string bad = dir.file("bad.tsv", text);
    EXPECT_CONTAINS(test::error_of([&] { CosaCnnKernels k(CosaCnnKernels::Mode::pick, arch, bad); }),
                    "pick cache " + bad + " " + why);
  }
}

// Whole graphs: Impl::cosa on a graph without grouped convolutions (the
// tiny graph with its grouped layer made plain), Impl::cosa_pick on one
// with them; both against the reference kernels.
TEST(CnnCosa, RunnersMatchTheReference) {
  test::TempDir dir;
  std::string plain = test::kTinyCnnGraph;
  plain.replace(plain.find("\"groups\": 2"), 11, "\"groups\": 1");
  const std::vector<std::pair<std::string, Impl>> runs{{plain, Impl::cosa}, {test::kCnnOpsGraph, Impl::cosa_pick}};
  for (const auto& [text, impl] : runs) {
    const ios::CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner ours(g, 2, 11, impl), ref(g, 2, 11, Impl::reference);
    ours.run_all();
    ref.run_all();
    for (const std::string& name : test::all_names(g))
      EXPECT_LE(test::max_relative_error(ours.value(name), ref.value(name)), 1e-5) << g.name << " node " << name;
    const auto& k = dynamic_cast<const CosaCnnKernels&>(ours.kernels());
    EXPECT_FALSE(k.decisions().empty());
  }
}

}  // namespace
}  // namespace sylva::cnn
