// Two threads on the GEMMs of a batched vertex function: Sylva's CPU
// MatMul kernel (which splits C = A·Bᵀ by columns over its threads) against
// oneDNN's own threaded sgemm on the same operands, Google Benchmark, at
// the shapes of the Tree-LSTM dynet cell at h = 512: a level of 34 or 128
// vertices, [rows x 1024]·[1024 x 1536] forward (B plain) and the input
// gradient [rows x 1536]·[1024 x 1536]ᵀ (B transposed). Arguments: rows,
// threads, B transposed.
//
//   OMP_WAIT_POLICY=active taskset -c 0,1 build/release/benchmarks/bench_gemm --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <dnnl.h>
#include <omp.h>

#include <vector>

#include <sylva/sylva.h>

namespace {

struct Operands {
  int64_t m, n, k;
  bool tb;
  std::vector<float> a, b, c;
  explicit Operands(const benchmark::State& s)
      : m(s.range(0)), n(s.range(2) ? 1024 : 1536), k(s.range(2) ? 1536 : 1024), tb(s.range(2) != 0),
        a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f), c(static_cast<size_t>(m * n)) {}
  void count(benchmark::State& s) const {
    s.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * static_cast<double>(s.iterations()),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  }
};

void SylvaMatMul(benchmark::State& state) {
  Operands o(state);
  sylva::Backend& cpu = sylva::backend_for(sylva::Device::cpu());
  cpu.set_threads(static_cast<int>(state.range(1)));
  sylva::ir::Node node;
  node.op = sylva::ir::OpKind::MatMul;
  node.attrs.trans_b = o.tb;
  const sylva::ExecContext ctx;
  const sylva::MatView in[] = {{o.a.data(), o.m, o.k, sylva::DType::f32},
                               {o.b.data(), o.tb ? o.n : o.k, o.tb ? o.k : o.n, sylva::DType::f32}};
  for (auto _ : state) cpu.run({node, in, {o.c.data(), o.m, o.n, sylva::DType::f32}, ctx});
  o.count(state);
  cpu.set_threads(1);
}

void OneDnnSgemm(benchmark::State& state) {
  Operands o(state);
  omp_set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state)
    dnnl_sgemm('N', o.tb ? 'T' : 'N', o.m, o.n, o.k, 1.0f, o.a.data(), o.k, o.b.data(), o.tb ? o.k : o.n, 0.0f,
               o.c.data(), o.n);
  o.count(state);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t rows : {34, 128})
    for (int64_t threads : {1, 2})
      for (int64_t tb : {0, 1}) b->Args({rows, threads, tb});
  b->ArgNames({"rows", "threads", "tb"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(SylvaMatMul)->Apply(Shapes);
BENCHMARK(OneDnnSgemm)->Apply(Shapes);

}  // namespace

BENCHMARK_MAIN();
