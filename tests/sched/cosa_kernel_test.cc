// run_conv realises mappings: CoSA's and random valid ones, on the CPU
// architecture, in float64 and float32, against the plain convolution.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "support/cosa_fixture.h"
#include "support/test_util.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

namespace sylva::cosa {
namespace {

using test::error_of;

Arch two_core_cpu() { return cpu_arch(test::two_core_facts()); }

template <class T>
std::vector<T> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Largest |got - want|, relative to the largest |want|.
template <class T>
double error_against(const std::vector<T>& got, const std::vector<T>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return err / scale;
}

// Largest |run_conv - reference| over the outputs, relative to the largest |reference|.
template <class T>
double relative_error(const Problem& p, const Mapping& m, const Arch& a, int threads) {
  const std::vector<T> w = random_values<T>(weight_size(p), 1), in = random_values<T>(input_size(p), 2);
  std::vector<T> got(static_cast<size_t>(output_size(p)), T(7)), want(got.size());
  run_conv(p, m, a, w.data(), in.data(), got.data(), threads);
  reference_conv(p, w.data(), in.data(), want.data());
  return error_against(got, want);
}

TEST(CosaKernel, RunsCosasMappingOfALayer) {
  const Arch a = two_core_cpu();
  for (const Problem& p : {test::conv_layer({3, 3, 8, 8, 16, 32, 1}), test::conv_layer({1, 1, 7, 7, 32, 16, 2}),
                           test::conv_layer({3, 3, 5, 5, 8, 8, 1}, /*stride=*/2), test::conv_layer({3, 3, 6, 6, 4, 8, 1}, 1, /*dilation=*/2)}) {
    const Result r = schedule(p, a, keep_everything(a));
    EXPECT_LT(relative_error<double>(p, r.mapping, a, 2), 1e-13);
    EXPECT_LT(relative_error<float>(p, r.mapping, a, 2), 1e-5);
  }
}

TEST(CosaKernel, RunsRandomValidMappingsOnOneAndTwoThreads) {
  const Arch a = two_core_cpu();
  const Mapspace ms = keep_everything(a);
  const Problem p = test::conv_layer({3, 3, 6, 4, 6, 8, 2}, 1);
  std::mt19937_64 rng(5);
  int tried = 0, threaded = 0;
  while (tried < 60) {
    const Mapping m = random_mapping(p, a, ms, rng);
    if (!fits_fanout(m, a)) continue;
    ++tried;
    // Spatial factors at L3 (the cores) over output dimensions run on threads.
    for (int d : {K, P, Q, N}) threaded += m.levels[3].spatial[static_cast<size_t>(d)] > 1;
    EXPECT_LT(relative_error<double>(p, m, a, 1 + tried % 2), 1e-13) << mapping_yaml(m);
  }
  EXPECT_GT(threaded, 5);  // the draw covers the threaded path
}

// Which way the micro-kernel vectorises a mapping's blocks (cosa_kernel.cc's rule).
bool lanes_along_q(const Mapping& m) {
  const auto& lanes = m.levels[1].spatial;
  return lanes[Q] > lanes[K];
}

// The float32 micro-kernel path: random valid mappings of layers whose
// extents are not multiples of the SIMD width (masked lanes), with stride 2
// (gathered inputs along Q, strided broadcasts along K), dilation and N > 1;
// drawn in the CPU mapspace (lanes along K, channels-last copies), with the
// lanes along Q only (vectors along Q in the plain layouts) and with every
// dimension allowed on the lanes.
TEST(CosaKernel, RandomValidMappingsInFloat32ThroughTheMicroKernel) {
  const Arch a = two_core_cpu();
  std::mt19937_64 rng(11);
  int along_k = 0, along_q = 0;
  Mapspace q_lanes = cpu_mapspace(a);
  q_lanes.spatial_dims[1] = {false, false, false, true, false, false, false};
  for (const Problem& p : {test::conv_layer({3, 3, 7, 9, 6, 20, 2}), test::conv_layer({1, 3, 5, 11, 3, 17, 1}, /*stride=*/2),
                           test::conv_layer({3, 2, 6, 19, 4, 12, 1}, 1, /*dilation=*/2)}) {
    for (const Mapspace& ms : {cpu_mapspace(a), q_lanes, keep_everything(a)}) {
      for (int tried = 0; tried < 25;) {
        const Mapping m = random_mapping(p, a, ms, rng);
        if (!fits_fanout(m, a) || !evaluate(m, p, a).valid) continue;
        ++tried;
        (lanes_along_q(m) ? along_q : along_k) += 1;
        EXPECT_LT(relative_error<float>(p, m, a, 1 + tried % 2), 1e-5) << mapping_yaml(m);
      }
    }
  }
  EXPECT_GT(along_k, 10);
  EXPECT_GT(along_q, 5);
}

TEST(CosaKernel, CosasCpuMappingsVectoriseAlongK) {
  const Arch a = two_core_cpu();
  const Problem p = test::conv_layer({3, 3, 14, 14, 32, 64, 1});
  const Result r = schedule(p, a, cpu_mapspace(a));
  EXPECT_EQ(r.mapping.levels[1].spatial[K], 16) << mapping_yaml(r.mapping);  // every lane busy, along K
  EXPECT_LT(relative_error<float>(p, r.mapping, a, 2), 1e-5);
}

// Weights packed once give run_conv's own numbers, bit for bit, on mappings
// that vectorise along K (reading the packed copy) and along Q (reading the
// plain weights it points to); packed for other bounds, an error.
TEST(CosaKernel, PackedWeightsGiveTheSameOutputs) {
  const Arch a = two_core_cpu();
  std::mt19937_64 rng(17);
  Mapspace q_lanes = cpu_mapspace(a);
  q_lanes.spatial_dims[1] = {false, false, false, true, false, false, false};
  const Problem p = test::conv_layer({3, 3, 6, 9, 5, 20, 2}, /*stride=*/2);
  const std::vector<float> w = random_values<float>(weight_size(p), 1), in = random_values<float>(input_size(p), 2);
  const PackedWeights packed = pack_weights(p, w.data(), 2);
  for (const Mapspace& ms : {cpu_mapspace(a), q_lanes})
    for (int tried = 0; tried < 10;) {
      const Mapping m = random_mapping(p, a, ms, rng);
      if (!fits_fanout(m, a) || !evaluate(m, p, a).valid) continue;
      ++tried;
      std::vector<float> plain(static_cast<size_t>(output_size(p))), from_packed(plain.size(), 7.0f);
      run_conv(p, m, a, w.data(), in.data(), plain.data(), 2);
      run_conv(p, m, a, packed, in.data(), from_packed.data(), 2);
      EXPECT_EQ(plain, from_packed) << mapping_yaml(m);
    }
  const Problem other = test::conv_layer({3, 3, 6, 9, 5, 21, 2}, 2);
  const Result r = schedule(other, a, cpu_mapspace(a));
  std::vector<float> in2(static_cast<size_t>(input_size(other))), out2(static_cast<size_t>(output_size(other)));
  EXPECT_CONTAINS(error_of([&] { run_conv(other, r.mapping, a, packed, in2.data(), out2.data()); }),
                  "weights packed for 'test' used for 'test', whose bounds differ");
}

// Channels-last data through run_conv_channels_last gives the reference
// convolution, whichever way the mapping puts its lanes (the kernel then
// vectorises along K regardless), with no output zeroed beforehand.
TEST(CosaKernel, ChannelsLastDataGiveTheReferenceConvolution) {
  const Arch a = two_core_cpu();
  std::mt19937_64 rng(23);
  Mapspace q_lanes = cpu_mapspace(a);
  q_lanes.spatial_dims[1] = {false, false, false, true, false, false, false};
  int tried = 0;
  for (const Problem& p : {test::conv_layer({3, 3, 7, 9, 6, 20, 2}), test::conv_layer({1, 3, 5, 11, 3, 17, 1}, /*stride=*/2),
                           test::conv_layer({3, 2, 6, 19, 4, 12, 1}, 1, /*dilation=*/2)}) {
    const std::vector<float> w = random_values<float>(weight_size(p), 1), in = random_values<float>(input_size(p), 2);
    std::vector<float> want(static_cast<size_t>(output_size(p))), in_nhwc(in.size());
    reference_conv(p, w.data(), in.data(), want.data());
    inputs_to_channels_last(p, in.data(), in_nhwc.data(), 2);
    const PackedWeights packed = pack_weights(p, w.data(), 2);
    for (const Mapspace& ms : {cpu_mapspace(a), q_lanes, keep_everything(a)})
      for (int n = 0; n < 8;) {
        const Mapping m = random_mapping(p, a, ms, rng);
        if (!fits_fanout(m, a) || !evaluate(m, p, a).valid) continue;
        ++n;
        ++tried;
        std::vector<float> npqk(want.size(), 7.0f), got(want.size());
        run_conv_channels_last(p, m, a, packed, in_nhwc.data(), npqk.data(), 1 + n % 2);
        outputs_from_channels_last(p, npqk.data(), got.data(), 2);
        EXPECT_LT(error_against(got, want), 1e-5) << mapping_yaml(m);
      }
  }
  EXPECT_EQ(tried, 72);
  const Problem p = test::conv_layer({1, 1, 4, 4, 8, 16, 1});
  const std::vector<float> w = random_values<float>(weight_size(test::conv_layer({1, 1, 4, 4, 8, 17, 1})), 1);
  const PackedWeights other = pack_weights(test::conv_layer({1, 1, 4, 4, 8, 17, 1}), w.data(), 1);
  std::vector<float> in(static_cast<size_t>(input_size(p))), out(static_cast<size_t>(output_size(p)));
  EXPECT_CONTAINS(error_of([&] {
                    run_conv_channels_last(p, schedule(p, a, cpu_mapspace(a)).mapping, a, other, in.data(), out.data());
                  }),
                  "run_conv_channels_last: weights packed for 'test' used for 'test', whose bounds differ");
}

// estimate_kernel worked by hand (AVX-512's 16 lanes): K = 32, P = 4, C = 8.
// Folded into one block (lanes on K, K x 2 and P x 4 in the registers, C x 8
// in L1): one call of 2 vectors x 4 broadcasts over 8 reduction steps,
// 8 x max(8 FMAs, 6 loads) / 2 + 1.5 x 8 + 20 = 64 cycles. C at DRAM
// instead, right above the block: folded into it, the same one block. C at
// DRAM with P x 2 of L3 between it and the block (the registers keep P x 2):
// 16 blocks of one step of 2 vectors x 2 broadcasts, 16 x (2 + 6 + 20). The
// cores on K instead of the registers' K: two blocks of one vector, run on
// two threads.
TEST(CosaKernel, EstimatesTheMicroKernelsCallsByHand) {
#if !defined(__AVX512F__)
  GTEST_SKIP() << "the hand-worked numbers assume AVX-512's 16 float32 lanes";
#else
  const Arch a = two_core_cpu();
  const Problem p = test::conv_layer({1, 1, 4, 1, 8, 32, 1});  // R S P Q C K N
  Mapping m = blank_mapping(a, cpu_mapspace(a));
  m.levels[1].spatial[K] = 16;
  m.levels[0].temporal[K] = 2;
  m.levels[0].temporal[P] = 4;
  m.levels[1].temporal[C] = 8;
  check_mapping(m, p, a);
  KernelEstimate e = estimate_kernel(p, m, 2);
  EXPECT_TRUE(e.micro_kernel);
  EXPECT_EQ(e.blocks, 1);
  EXPECT_EQ(e.calls_per_block, 1);
  EXPECT_EQ(e.threads_used, 1);
  EXPECT_DOUBLE_EQ(e.cycles, 64);
  EXPECT_LT(relative_error<float>(p, m, a, 2), 1e-5);

  const auto expect_blocks = [&](const Mapping& mm, int64_t blocks, double cycles) {
    check_mapping(mm, p, a);
    const KernelEstimate k = estimate_kernel(p, mm, 2);
    EXPECT_EQ(k.blocks, blocks) << mapping_yaml(mm);
    EXPECT_DOUBLE_EQ(k.cycles, cycles) << mapping_yaml(mm);
    EXPECT_LT(relative_error<float>(p, mm, a, 2), 1e-5) << mapping_yaml(mm);
  };
  Mapping outer = m;
  outer.levels[1].temporal[C] = 1;
  outer.levels[4].temporal[C] = 8;
  expect_blocks(outer, 1, 64);
  Mapping between = outer;
  between.levels[0].temporal[P] = 2;
  between.levels[3].temporal[P] = 2;
  expect_blocks(between, 16, 16 * (std::max(4, 4) / 2.0 + 1.5 * 4 + 20));

  Mapping cores = m;
  cores.levels[0].temporal[K] = 1;
  cores.levels[3].spatial[K] = 2;  // L3's fan-out: the two cores
  check_mapping(cores, p, a);
  e = estimate_kernel(p, cores, 2);
  EXPECT_EQ(e.blocks, 2);
  EXPECT_EQ(e.threads_used, 2);
  EXPECT_DOUBLE_EQ(e.cycles, 8 * std::max(4, 5) / 2.0 + 1.5 * 4 + 20);  // one block per thread: 1 vector x 4
  EXPECT_DOUBLE_EQ(estimate_kernel(p, cores, 1).cycles, 2 * e.cycles);
  EXPECT_LT(relative_error<float>(p, cores, a, 2), 1e-5);
#endif
}

TEST(CosaKernel, RefusesAMappingThatDoesNotCoverTheLayer) {
  const Arch a = two_core_cpu();
  const Problem p = test::conv_layer({3, 3, 4, 4, 4, 4, 1});
  Mapping m = blank_mapping(a, keep_everything(a));  // every factor 1: nothing covers R..K
  std::vector<double> w(static_cast<size_t>(weight_size(p))), in(static_cast<size_t>(input_size(p))),
      out(static_cast<size_t>(output_size(p)));
  EXPECT_CONTAINS(error_of([&] { run_conv(p, m, a, w.data(), in.data(), out.data()); }),
                  "mapping of 'test': the factors of R");
}

// C = A·B written out plainly, on its own (not through reference_conv).
template <class T>
std::vector<T> plain_product(const std::vector<T>& A, const std::vector<T>& B, int64_t m, int64_t n, int64_t k) {
  std::vector<T> C(static_cast<size_t>(m * n), T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += A[static_cast<size_t>(i * k + l)] * B[static_cast<size_t>(l * n + j)];
      C[static_cast<size_t>(i * n + j)] = acc;
    }
  return C;
}

template <class T>
double gemm_error(const Problem& p, const Mapping& m, const Arch& a, int threads) {
  const int64_t rows = p.bounds[N], cols = p.bounds[K], inner = p.bounds[C];
  const std::vector<T> A = random_values<T>(rows * inner, 3), B = random_values<T>(inner * cols, 4);
  std::vector<T> got(static_cast<size_t>(rows * cols), T(7));
  run_gemm(p, m, a, A.data(), B.data(), got.data(), threads);
  const std::vector<T> want = plain_product(A, B, rows, cols, inner);
  return error_against(got, want);
}

// GEMMs of odd sizes (masked lanes, a single row, a single column): CoSA's
// mapping and random valid mappings in the CPU mapspace and with every
// dimension allowed anywhere, float32 (the micro-kernel in place on A, B
// and C) and float64 (B transposed, the plain loop nest).
TEST(CosaKernel, RunsGemmsAgainstThePlainProduct) {
  const Arch a = two_core_cpu();
  std::mt19937_64 rng(13);
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 17, 9}, {33, 40, 12}, {64, 100, 70}, {5, 1, 8}}) {
    const Problem p = gemm_problem(m, n, k);
    ASSERT_TRUE(is_gemm(p));
    EXPECT_EQ(p.macs(), m * n * k);
    const Result r = schedule(p, a, cpu_mapspace(a));
    EXPECT_LT(gemm_error<float>(p, r.mapping, a, 2), 1e-5) << mapping_yaml(r.mapping);
    EXPECT_LT(gemm_error<double>(p, r.mapping, a, 2), 1e-13) << mapping_yaml(r.mapping);
    for (const Mapspace& ms : {cpu_mapspace(a), keep_everything(a)})
      for (int tried = 0; tried < 8;) {
        const Mapping rm = random_mapping(p, a, ms, rng);
        if (!fits_fanout(rm, a) || !evaluate(rm, p, a).valid) continue;
        ++tried;
        EXPECT_LT(gemm_error<float>(p, rm, a, 1 + tried % 2), 1e-5) << mapping_yaml(rm);
        EXPECT_LT(gemm_error<double>(p, rm, a, 1 + tried % 2), 1e-13) << mapping_yaml(rm);
      }
  }
}

TEST(CosaKernel, GemmRefusesBadBoundsAndConvolutionProblems) {
  EXPECT_CONTAINS(error_of([] { gemm_problem(4, 0, 3, "fc"); }), "GEMM 'fc': bounds m = 4, n = 0, k = 3");
  const Problem parsed = parse_gemm("3x4x5");
  EXPECT_EQ(parsed.name, "gemm_3x4x5");
  EXPECT_EQ(parsed.bounds, gemm_problem(3, 4, 5).bounds);
  for (const char* bad : {"64x640", "3x4x5x6", "3x4x5 ", "axbxc", ""})
    EXPECT_CONTAINS(error_of([&] { parse_gemm(bad); }), "a GEMM is m x n x k") << bad;
  const Arch a = two_core_cpu();
  const Problem conv = test::conv_layer({3, 3, 4, 4, 4, 4, 1});
  const Result r = schedule(conv, a, keep_everything(a));
  std::vector<float> buf(1024);
  EXPECT_CONTAINS(error_of([&] { run_gemm(conv, r.mapping, a, buf.data(), buf.data(), buf.data()); }),
                  "problem 'test' is not a GEMM");
}

}  // namespace
}  // namespace sylva::cosa
