// Is Sylva's dense optimiser step at the memory-bandwidth bound? Google
// Benchmark, one thread: Sylva's Adam step (Optimizer::step) over a
// parameter of N floats against a plain loop with Adam's access pattern
// (w, g, m, v read; w, m, v written) over arrays of the same size. Both
// report bytes/s over the 7·4·N bytes they move; the plain loop is the
// bound this machine's core reaches. N = 3.03 M is Tree-LSTM h = d = 128 on
// SST (docs/benchmarks.md, "Against the real DyNet").
//
//   taskset -c 0 build/release/benchmarks/bench_optimizer --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include <sylva/sylva.h>

namespace {

constexpr int64_t kRows = 23'672, kCols = 128;  // 3.03 M floats
constexpr double kBytesPerElement = 7 * sizeof(float);

void SylvaAdamStep(benchmark::State& state) {
  sylva::backend_for(sylva::Device::cpu()).set_threads(static_cast<int>(state.range(0)));
  sylva::ParameterSet ps(sylva::DType::f32, 1);
  sylva::Parameter& p = ps.add("E", {kRows, kCols}, sylva::Init::uniform(-0.1, 0.1));
  for (int64_t i = 0; i < p.grad.numel(); i += 97) p.grad.set(i, 0.01);
  sylva::Adam adam{{.lr = 0.001}};
  for (auto _ : state) adam.step(ps);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytesPerElement * kRows * kCols));
  sylva::backend_for(sylva::Device::cpu()).set_threads(1);
}
BENCHMARK(SylvaAdamStep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void PlainAdamLoop(benchmark::State& state) {
  const auto n = static_cast<size_t>(kRows * kCols);
  std::vector<float> w(n, 0.05f), g(n, 0.0f), m(n, 0.0f), v(n, 0.0f);
  for (size_t i = 0; i < n; i += 97) g[i] = 0.01f;
  for (auto _ : state) {
    float* __restrict W = w.data();
    const float* __restrict G = g.data();
    float* __restrict M = m.data();
    float* __restrict V = v.data();
    for (size_t i = 0; i < n; ++i) {
      M[i] = 0.9f * M[i] + 0.1f * G[i];
      V[i] = 0.999f * V[i] + 0.001f * G[i] * G[i];
      W[i] -= 0.001f * M[i] / (std::sqrt(V[i]) + 1e-8f);
    }
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytesPerElement * n));
}
BENCHMARK(PlainAdamLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
