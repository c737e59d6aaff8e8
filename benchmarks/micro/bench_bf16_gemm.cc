// What bf16 can give Sylva's GEMMs on this CPU (issue 67's first
// measurement): oneDNN's matmul primitive with float32 operands against
// bf16 operands (float32 accumulation and output), one thread, at the
// shapes of the Tree-LSTM dynet cell at h = 512 and h = 128 -- a level of
// `rows` vertices times the gate weights, [rows x 2h]·[2h x 3h] forward,
// and the weight gradient [2h x rows]·[rows x 3h] (A transposed) -- with
// the weights packed once (tag any), as a bf16 path would keep its copies
// of the parameters. `Bf16WithCast` also converts the float32 activations to
// bf16 each call (a reorder): what a bf16 GEMM costs when its input was
// stored in float32. `SylvaF32` and `SylvaBf16` run Sylva's own MatMul
// kernel (backend_for(cpu)) at the same shapes: oneDNN's sgemm, and under
// Precision::bf16 the matmul primitive with the row count left to run time,
// weights as a parameter's bfloat16 copy, activations float32 converted
// per call. Arguments: h, rows, weight gradient (0/1). Reports GFLOP/s; the
// ratio bf16/f32 is read off two rows with the same arguments. Under
// DNNL_MAX_CPU_ISA=AVX512_CORE oneDNN emulates bf16 (without AVX512_BF16).
//
//   OMP_NUM_THREADS=1 taskset -c 0 build/release/benchmarks/bench_bf16_gemm --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true   (one line)
#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/core/bfloat16.h"

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;

struct Gemm {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  int64_t m, n, k;
  dnnl::matmul prim;
  memory a, b, c, a_f32;  // a_f32: float32 activations for the cast variant
  dnnl::reorder cast;

  // C[m x n] = A[m x k]·B[k x n]; for the weight gradient A is stored
  // transposed ([k x m] row-major: the activations of a level, rows first).
  Gemm(int64_t h, int64_t rows, bool weight_grad, Dt dt) {
    m = weight_grad ? 2 * h : rows;
    k = weight_grad ? rows : 2 * h;
    n = 3 * h;
    const memory::desc a_md({m, k}, dt, weight_grad ? Tag::ba : Tag::ab);
    const memory::desc b_any({k, n}, dt, Tag::any);
    const memory::desc c_md({m, n}, Dt::f32, Tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), eng);
    prim = dnnl::matmul(pd);
    a = memory(a_md, eng);
    c = memory(c_md, eng);
    // The weights: float32 values reordered once into the primitive's layout and type.
    memory b_plain({{k, n}, Dt::f32, Tag::ab}, eng);
    fill(b_plain, 0.25f);
    b = memory(pd.weights_desc(), eng);
    dnnl::reorder(b_plain, b).execute(stream, b_plain, b);
    a_f32 = memory({{m, k}, Dt::f32, weight_grad ? Tag::ba : Tag::ab}, eng);
    fill(a_f32, 0.5f);
    cast = dnnl::reorder(a_f32, a);
    cast.execute(stream, a_f32, a);
    stream.wait();
  }
  static void fill(memory& mem, float v) {
    auto* p = static_cast<float*>(mem.get_data_handle());
    const size_t n = mem.get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) p[i] = v;
  }
  void run(bool with_cast) {
    if (with_cast) cast.execute(stream, a_f32, a);
    prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
  void count(benchmark::State& s) const {
    s.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * static_cast<double>(s.iterations()),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  }
};

void run(benchmark::State& state, Dt dt, bool with_cast) {
  Gemm g(state.range(0), state.range(1), state.range(2) != 0, dt);
  for (auto _ : state) g.run(with_cast);
  g.count(state);
}

// Sylva's MatMul kernel: forward X[rows x 2h]·W[2h x 3h] with W a
// parameter (its bfloat16 copy under bf16); weight gradient Xᵀ·dG, both
// per-vertex values in float32.
void sylva_kernel(benchmark::State& state, sylva::Precision precision) {
  using sylva::DType;
  const int64_t h = state.range(0), rows = state.range(1);
  const bool wg = state.range(2) != 0;
  const int64_t m = wg ? 2 * h : rows, k = wg ? rows : 2 * h, n = 3 * h;
  std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f),
      c(static_cast<size_t>(m * n));
  std::vector<uint16_t> b16(b.size());
  sylva::to_bf16(b.data(), b16.data(), static_cast<int64_t>(b.size()));
  sylva::ir::Node mm;
  mm.op = sylva::ir::OpKind::MatMul;
  mm.attrs.trans_a = wg;
  const bool low = precision == sylva::Precision::bf16;
  const sylva::MatView in[2] = {
      {a.data(), wg ? k : m, wg ? m : k, DType::f32},
      low && !wg ? sylva::MatView{b16.data(), k, n, DType::bf16} : sylva::MatView{b.data(), k, n, DType::f32}};
  sylva::ExecContext ctx;
  ctx.gemm = precision;
  sylva::Backend& cpu = sylva::backend_for(sylva::Device::cpu());
  if (const std::string why = cpu.precision_unsupported(precision); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) cpu.run({mm, in, {c.data(), m, n, DType::f32}, ctx});
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void F32(benchmark::State& state) { run(state, Dt::f32, false); }
void SylvaF32(benchmark::State& state) { sylva_kernel(state, sylva::Precision::fp32); }
void SylvaBf16(benchmark::State& state) { sylva_kernel(state, sylva::Precision::bf16); }
void Bf16(benchmark::State& state) { run(state, Dt::bf16, false); }
void Bf16WithCast(benchmark::State& state) { run(state, Dt::bf16, true); }

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t h : {128, 512})
    for (int64_t rows : {34, 128, 512})
      for (int64_t wg : {0, 1}) b->Args({h, rows, wg});
  b->ArgNames({"h", "rows", "wgrad"});
  b->UseRealTime();  // oneDNN's threads do the work, not the calling thread
}

BENCHMARK(F32)->Apply(Shapes);
BENCHMARK(Bf16)->Apply(Shapes);
BENCHMARK(Bf16WithCast)->Apply(Shapes);
BENCHMARK(SylvaF32)->Apply(Shapes);
BENCHMARK(SylvaBf16)->Apply(Shapes);

}  // namespace

BENCHMARK_MAIN();
