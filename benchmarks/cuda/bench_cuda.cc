// GPU microbenchmarks of the CUDA backend against the CPU backend, at the
// shapes of the Tree-LSTM and LSTM cells (d = 300, h = 150, 5 gates):
//   gemm   X[rows x 300] · W[300 x 750]: cuBLAS vs the CPU backend
//   fused  an LSTM gate group (slices, sigmoid, tanh, mul, add) as one
//          NVRTC kernel vs the same ops one kernel each, and vs the CPU
// Each case: median (and min/max) of --repeats timed calls after a warm-up;
// every backend call synchronises, so wall time is the kernel's time plus
// launch overhead. Exits 2 with the reason when there is no GPU.
//
//   bench_cuda [--rows 64,256,1024,4096] [--repeats 20]
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/ir/graph.h"

using namespace sylva;
using ir::OpKind;

namespace {

struct DevMat {  // a float matrix on the host and on the device
  std::vector<float> host;
  float* dev = nullptr;
  int64_t rows, cols;
  DevMat(int64_t r, int64_t c) : host(static_cast<size_t>(r * c)), rows(r), cols(c) {
    std::mt19937 rng(static_cast<uint32_t>(r * 7 + c));
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : host) v = u(rng);
    if (cudaMalloc(&dev, host.size() * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {  // the backend's stream does not wait for the default one
      std::fprintf(stderr, "bench_cuda: cannot allocate %lld x %lld on the device\n", static_cast<long long>(r),
                   static_cast<long long>(c));
      std::exit(1);
    }
  }
  ~DevMat() { cudaFree(dev); }
  DevMat(const DevMat&) = delete;
  DevMat& operator=(const DevMat&) = delete;
  MatView h() { return {host.data(), rows, cols, DType::f32}; }
  MatView d() const { return {dev, rows, cols, DType::f32}; }
};

struct Timing {
  double median, lo, hi;  // microseconds
};

Timing time_it(int repeats, const std::function<void()>& f) {
  f();  // warm-up (kernel compilation, cuBLAS heuristics, caches)
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CUDA backend microbenchmarks (cuBLAS GEMM, NVRTC-fused LSTM gates) against the CPU backend"};
  std::vector<int64_t> rows_list{64, 256, 1024, 4096};
  int repeats = 20;
  app.add_option("--rows", rows_list, "rows (vertices per task) to measure")->delimiter(',')->capture_default_str();
  app.add_option("--repeats", repeats, "timed calls per case (median reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_cuda: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  Backend& gpu = backend_for(Device::cuda());
  Backend& cpu = backend_for(Device::cpu());
  const int64_t d = 300, h = 150;
  std::printf("# bench_cuda on %s; median [min, max] of %d calls, microseconds\n", prop.name, repeats);
  std::printf("%-6s %6s %12s %22s %22s %9s\n", "case", "rows", "what", "GPU", "baseline", "speedup");
  ir::Node mm;
  mm.op = OpKind::MatMul;
  ExecContext ctx;
  for (int64_t rows : rows_list) {
    DevMat x(rows, d), w(d, 5 * h), y(rows, 5 * h);
    const MatView in_d[] = {x.d(), w.d()}, in_h[] = {x.h(), w.h()};
    const Timing g = time_it(repeats, [&] {
      gpu.run({mm, in_d, y.d(), ctx});
      gpu.synchronize();
    });
    const Timing c = time_it(repeats, [&] { cpu.run({mm, in_h, y.h(), ctx}); });
    const double gflop = 2.0 * static_cast<double>(rows * d * 5 * h) * 1e-9;
    std::printf("%-6s %6lld %12s %9.1f [%5.1f,%6.1f] %9.1f [%5.1f,%6.1f] %8.1fx   (GPU %.0f GFLOP/s)\n", "gemm",
                static_cast<long long>(rows), "cuBLAS/CPU", g.median, g.lo, g.hi, c.median, c.lo, c.hi,
                c.median / g.median, gflop / (g.median * 1e-6));
  }
  // out0 = sigmoid(z[:, 0:h]) * tanh(z[:, h:2h]) + c (c: rows x h); out1 = tanh(out0)
  FusedProgram p;
  p.name = "lstm-gates";
  p.steps = {fused_step(OpKind::Slice, {-1}, h, -1, 0), fused_step(OpKind::Slice, {-1}, h, -1, h),
             fused_step(OpKind::Sigmoid, {0}, h),        fused_step(OpKind::Tanh, {1}, h),
             fused_step(OpKind::Mul, {2, 3}, h),         fused_step(OpKind::Add, {4, -2}, h, 0),
             fused_step(OpKind::Tanh, {5}, h, 1)};
  for (int64_t rows : rows_list) {
    DevMat z(rows, 5 * h), c(rows, h), o0(rows, h), o1(rows, h), t0(rows, h), t1(rows, h), t2(rows, h), zs(rows, h),
        zt(rows, h);
    const MatView in_d[] = {z.d(), c.d()}, out_d[] = {o0.d(), o1.d()}, in_h[] = {z.h(), c.h()},
                  out_h[] = {o0.h(), o1.h()};
    const Timing fused = time_it(repeats, [&] {
      gpu.run_fused(p, in_d, out_d, rows);
      gpu.synchronize();
    });
    // Unfused: the slices as copies, then one kernel per op.
    const auto unfused = [&] {
      const auto one = [&](OpKind op, std::vector<MatView> in, MatView out) {
        ir::Node n;
        n.op = op;
        gpu.run({n, in, out, ctx});
      };
      FusedProgram slice;
      slice.steps = {fused_step(OpKind::Slice, {-1}, h, 0, 0)};
      const MatView zin[] = {z.d()};
      const MatView zs_out[] = {zs.d()}, zt_out[] = {zt.d()};
      gpu.run_fused(slice, zin, zs_out, rows);
      slice.steps[0].begin = h;
      gpu.run_fused(slice, zin, zt_out, rows);
      one(OpKind::Sigmoid, {zs.d()}, t0.d());
      one(OpKind::Tanh, {zt.d()}, t1.d());
      one(OpKind::Mul, {t0.d(), t1.d()}, t2.d());
      one(OpKind::Add, {t2.d(), c.d()}, o0.d());
      one(OpKind::Tanh, {o0.d()}, o1.d());
      gpu.synchronize();
    };
    const Timing separate = time_it(repeats, unfused);
    const Timing host = time_it(repeats, [&] { cpu.run_fused(p, in_h, out_h, rows); });
    std::printf("%-6s %6lld %12s %9.1f [%5.1f,%6.1f] %9.1f [%5.1f,%6.1f] %8.1fx\n", "fused",
                static_cast<long long>(rows), "vs unfused", fused.median, fused.lo, fused.hi, separate.median,
                separate.lo, separate.hi, separate.median / fused.median);
    std::printf("%-6s %6lld %12s %9.1f [%5.1f,%6.1f] %9.1f [%5.1f,%6.1f] %8.1fx\n", "fused",
                static_cast<long long>(rows), "vs CPU fused", fused.median, fused.lo, fused.hi, host.median, host.lo,
                host.hi, host.median / fused.median);
  }
  return 0;
}
