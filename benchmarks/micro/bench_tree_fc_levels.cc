// The GEMMs of one Tree-FC tree (batch 1, 256 leaves, h = 256) level by
// level, as Sylva's CPU backend runs them, against oneDNN's matmul
// primitive with the weights packed once per pass: is there time to win
// in the kernels themselves? Google Benchmark, one thread.
//
// Levels of 128, 64, ..., 1 internal vertices; each level's input is its
// children's messages ([rows x 2h], the concat Sylva reads in place).
//  - forward: out = relu([h_l; h_r]·W + x + b) into the level's message rows;
//  - backward: the input gradient dG·Wᵀ of every level, top level first.
// `Kernel*`: Sylva's MatMul kernel (oneDNN's sgemm) into a scratch block,
// then one pass of the elementwise tail (the runtime's fused group does
// that pass); backward: the kernel with B transposed.
// `Packed*`: one oneDNN matmul primitive per level size, created once
// (untimed), the weights reordered into the primitive's blocked layout
// once per pass (timed); forward: bias, the per-row add and relu as the
// primitive's post-ops, written straight into the message rows; backward:
// Wᵀ packed the same way.
//
//   taskset -c 0 build/release/benchmarks/bench_tree_fc_levels --benchmark_repetitions=5
//
// A micro-benchmark on hot operands: no optimiser, no leaves, no lazy
// weight gradient; docs/notes/tree-fc.md says what it does and does not show.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <sylva/sylva.h>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

constexpr int64_t kHidden = 256, kLeaves = 256;

// One tree's values: level sizes, messages (the leaves' first), inputs,
// gradients, weights.
struct Tree {
  std::vector<int64_t> levels;  // internal vertices per level, bottom first
  int64_t internal = 0;
  std::vector<float> w, b, x, h, scratch, dg, dx;
  Tree() {
    for (int64_t m = kLeaves / 2; m >= 1; m /= 2) levels.push_back(m);
    for (int64_t m : levels) internal += m;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-0.1f, 0.1f);
    const auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(static_cast<size_t>(n));
      for (float& f : v) f = u(rng);
    };
    fill(w, 2 * kHidden * kHidden);
    fill(b, kHidden);
    fill(x, internal * kHidden);
    fill(h, (kLeaves + internal) * kHidden);  // leaves' messages, then each level's
    fill(dg, internal * kHidden);
    scratch.resize(static_cast<size_t>(kLeaves / 2 * kHidden));
    dx.resize(static_cast<size_t>(internal * 2 * kHidden));
  }
  // Level l's children's messages (as [rows, 2h]) and its own message rows.
  int64_t child_row(size_t l) const {
    int64_t r = 0;
    for (size_t k = 0; k < l; ++k) r += k == 0 ? kLeaves : levels[k - 1];
    return r;
  }
  int64_t own_row(size_t l) const { return child_row(l) + (l == 0 ? kLeaves : levels[l - 1]); }
  int64_t task_row(size_t l) const {  // row of level l among the internal vertices
    int64_t r = 0;
    for (size_t k = 0; k < l; ++k) r += levels[k];
    return r;
  }
};

void count(benchmark::State& s, const Tree& t) {
  s.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(t.internal * 2 * kHidden * kHidden) *
                             static_cast<double>(s.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// One pass through Sylva's CPU MatMul kernel (plus the elementwise tail forward).
void kernel_pass(Tree& t, bool backward) {
  sylva::Backend& cpu = sylva::backend_for(sylva::Device::cpu());
  sylva::ir::Node mm;
  mm.op = sylva::ir::OpKind::MatMul;
  mm.attrs.trans_b = backward;
  const sylva::ExecContext ctx;
  const auto f32 = sylva::DType::f32;
  if (!backward) {
    for (size_t l = 0; l < t.levels.size(); ++l) {
      const int64_t m = t.levels[l];
      const sylva::MatView in[] = {{t.h.data() + t.child_row(l) * kHidden, m, 2 * kHidden, f32},
                                   {t.w.data(), 2 * kHidden, kHidden, f32}};
      cpu.run({mm, in, {t.scratch.data(), m, kHidden, f32}, ctx});
      float* out = t.h.data() + t.own_row(l) * kHidden;
      const float* x = t.x.data() + t.task_row(l) * kHidden;
      for (int64_t i = 0; i < m * kHidden; ++i) out[i] = std::max(t.scratch[i] + x[i] + t.b[i % kHidden], 0.0f);
    }
    return;
  }
  for (size_t l = t.levels.size(); l-- > 0;) {
    const int64_t m = t.levels[l], r = t.task_row(l);
    const sylva::MatView in[] = {{t.dg.data() + r * kHidden, m, kHidden, f32}, {t.w.data(), 2 * kHidden, kHidden, f32}};
    cpu.run({mm, in, {t.dx.data() + r * 2 * kHidden, m, 2 * kHidden, f32}, ctx});
  }
}

void KernelLevels(benchmark::State& state) {
  const bool backward = state.range(0) != 0;
  Tree t;
  sylva::backend_for(sylva::Device::cpu()).set_threads(1);
  for (auto _ : state) {
    kernel_pass(t, backward);
    benchmark::DoNotOptimize(t.h.data());
    benchmark::DoNotOptimize(t.dx.data());
  }
  count(state, t);
}

void PackedLevels(benchmark::State& state) {
  const bool backward = state.range(0) != 0;
  Tree t;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  // Weights as stored ([2h, h], row-major), or their transpose as a view.
  const memory::dims wdims = backward ? memory::dims{kHidden, 2 * kHidden} : memory::dims{2 * kHidden, kHidden};
  memory plain({wdims, kF32, backward ? Tag::ba : Tag::ab}, eng, t.w.data());
  std::map<int64_t, dnnl::matmul> prims;
  memory::desc packed_desc;
  for (int64_t m : t.levels) {
    const memory::desc any(wdims, kF32, Tag::any);
    dnnl::matmul::primitive_desc pd;
    if (!backward) {
      dnnl::post_ops po;
      po.append_binary(dnnl::algorithm::binary_add, memory::desc({m, kHidden}, kF32, Tag::ab));
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(memory::desc({m, 2 * kHidden}, kF32, Tag::ab), any,
                             memory::desc({1, kHidden}, kF32, Tag::ab), memory::desc({m, kHidden}, kF32, Tag::ab)),
          attr, eng);
    } else {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(memory::desc({m, kHidden}, kF32, Tag::ab), any,
                                                           memory::desc({m, 2 * kHidden}, kF32, Tag::ab)),
                                        eng);
    }
    if (prims.empty()) packed_desc = pd.weights_desc();
    if (pd.weights_desc() != packed_desc) {
      state.SkipWithError("oneDNN chose different weight layouts for different level sizes");
      return;
    }
    prims.emplace(m, dnnl::matmul(pd));
  }
  memory packed(packed_desc, eng);
  dnnl::reorder pack(plain, packed);
  memory bias({{1, kHidden}, kF32, Tag::ab}, eng, t.b.data());
  const auto pass = [&] {
    pack.execute(s, plain, packed);
    if (!backward) {
      for (size_t l = 0; l < t.levels.size(); ++l) {
        const int64_t m = t.levels[l];
        memory src({{m, 2 * kHidden}, kF32, Tag::ab}, eng, t.h.data() + t.child_row(l) * kHidden);
        memory dst({{m, kHidden}, kF32, Tag::ab}, eng, t.h.data() + t.own_row(l) * kHidden);
        memory x({{m, kHidden}, kF32, Tag::ab}, eng, t.x.data() + t.task_row(l) * kHidden);
        prims.at(m).execute(s, {{DNNL_ARG_SRC, src},
                                {DNNL_ARG_WEIGHTS, packed},
                                {DNNL_ARG_BIAS, bias},
                                {DNNL_ARG_DST, dst},
                                {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, x}});
      }
    } else {
      for (size_t l = t.levels.size(); l-- > 0;) {
        const int64_t m = t.levels[l], r = t.task_row(l);
        memory src({{m, kHidden}, kF32, Tag::ab}, eng, t.dg.data() + r * kHidden);
        memory dst({{m, 2 * kHidden}, kF32, Tag::ab}, eng, t.dx.data() + r * 2 * kHidden);
        prims.at(m).execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, dst}});
      }
    }
    s.wait();
  };
  // Both compute the same values (up to float rounding) before either is timed.
  Tree reference = t;
  kernel_pass(reference, backward);
  pass();
  const std::vector<float>& got = backward ? t.dx : t.h;
  const std::vector<float>& want = backward ? reference.dx : reference.h;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-4f * (1.0f + std::abs(want[i]))) {
      state.SkipWithError("the packed primitive's values differ from the kernel's");
      return;
    }
  for (auto _ : state) {
    pass();
    benchmark::DoNotOptimize(t.h.data());
    benchmark::DoNotOptimize(t.dx.data());
  }
  count(state, t);
}

BENCHMARK(KernelLevels)->ArgName("backward")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(PackedLevels)->ArgName("backward")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
