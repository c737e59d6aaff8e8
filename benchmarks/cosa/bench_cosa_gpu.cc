// CoSA's mappings as CUDA kernels (docs/notes/cosa-kernels.md, "CoSA kernels on the
// GPU"). Per layer, on this_gpu_arch() with gpu_mapspace: CoSA's mapping
// (cpu_limits: gap 0.3, 2 s), random-5, random search and the hybrid mapper
// at budgets of CoSA's solve time, each picked on the analytical model and
// realised by the same generator (gpu_conv_plan, run_gpu_conv: NVRTC),
// checked against the plain convolution and timed with CUDA events (median
// of --reps launches after a warm-up; each launch zeroes the outputs
// first); the same layer through Sylva's cuDNN kernels
// (make_cudnn_cnn_kernels, its own algorithm choice, a zero bias); and for
// the first --correlate layers (fewest MACs) the Spearman rank correlation
// between the model's cycles and the measured time of random valid
// mappings. Without a GPU it says so and exits 1.
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "sylva/backend/cnn_kernels.h"
#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/graph/cosa_gpu_run.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_gpu.h"
#include "sylva/sched/cosa_gpu_kernel.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

using namespace sylva;
using namespace sylva::cosa;
using namespace sylva::cosa::bench;

namespace {

struct LayerData {
  std::vector<float> w, in, out, ref;
};

LayerData layer_data(const Problem& p) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  LayerData d;
  d.w.resize(static_cast<size_t>(weight_size(p)));
  d.in.resize(static_cast<size_t>(input_size(p)));
  d.out.resize(static_cast<size_t>(output_size(p)));
  d.ref.resize(d.out.size());
  for (float& x : d.w) x = u(rng);
  for (float& x : d.in) x = u(rng);
  reference_conv(p, d.w.data(), d.in.data(), d.ref.data());
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The mapping's kernel: median seconds of `reps` launches after a warm-up,
// checked against the reference (a wrong kernel is an error, not a number).
double time_mapping(const Problem& p, const Mapping& m, const Arch& a, LayerData& d, int reps) {
  const GpuConvPlan plan = gpu_conv_plan(p, m, a);
  const GpuRun run = run_gpu_conv(plan, d.w.data(), d.in.data(), d.out.data(), reps + 1);
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-4, "[bench_cosa_gpu] ", p.name, ": the generated kernel is off the reference by ", err, "\n",
              describe(plan));
  return median(std::vector<double>(run.seconds.begin() + 1, run.seconds.end()));
}

// The layer through Sylva's cuDNN convolution: median seconds of `reps`
// launches (CUDA events on its stream) after a warm-up that lets cuDNN pick.
double time_cudnn(const Problem& p, LayerData& d, int reps) {
  if (p.w_dilation != 1 || p.h_dilation != 1) return NAN;  // cnn::ConvSpec has no dilation
  const auto& B = p.bounds;
  const auto [wi, hi] = input_extents(p);
  std::unique_ptr<cnn::CnnKernels> k = cnn::make_cudnn_cnn_kernels();
  Backend& b = k->backend();
  Memory& mem = b.memory();
  const auto alloc = [&](const std::vector<float>& host) {
    void* ptr = mem.allocate(host.size() * sizeof(float));
    b.upload(ptr, host.data(), host.size() * sizeof(float));
    return static_cast<float*>(ptr);
  };
  float* x = alloc(d.in);
  float* w = alloc(d.w);
  float* bias = alloc(std::vector<float>(static_cast<size_t>(B[K]), 0.0f));
  float* y = alloc(d.out);
  const cnn::ConvSpec spec{.key = p.name,
                           .out_channels = B[K],
                           .groups = 1,
                           .kernel = {B[R], B[S]},
                           .stride = {p.w_stride, p.h_stride},
                           .padding = {0, 0},
                           .out_h = B[P],
                           .out_w = B[Q],
                           .act = cnn::Act::identity};
  const cnn::Nchw shape{B[N], B[C], wi, hi};
  k->conv(spec, x, shape, w, bias, y);
  b.synchronize();
  const auto stream = static_cast<cudaStream_t>(b.native_stream());
  cudaEvent_t start = nullptr, stop = nullptr;
  SYLVA_CHECK(cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess,
              "[bench_cosa_gpu] cudaEventCreate failed");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start, stream);
    k->conv(spec, x, shape, w, bias, y);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  b.download(d.out.data(), y, d.out.size() * sizeof(float));
  for (float* ptr : {x, w, bias, y}) mem.release(ptr);
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-3, "[bench_cosa_gpu] ", p.name, ": cuDNN is off the reference by ", err);
  return median(t);
}

// Spearman's rho between the model's cycles and the measured time of
// `count` random valid mappings (each the median of 3 launches).
double correlate(const Problem& p, const Arch& a, const Mapspace& ms, LayerData& d, int count) {
  std::mt19937_64 rng(7);
  std::vector<double> predicted, measured;
  for (int64_t draws = 0; static_cast<int>(predicted.size()) < count && draws < 1000000; ++draws) {
    const Mapping m = random_mapping(p, a, ms, rng);
    if (!fits_fanout(m, a) || !evaluate(m, p, a).valid) continue;
    predicted.push_back(static_cast<double>(evaluate(m, p, a).cycles));
    measured.push_back(time_mapping(p, m, a, d, 3));
    if (predicted.size() % 25 == 0)
      std::fprintf(stderr, "  %s: %zu of %d random mappings timed\n", p.name.c_str(), predicted.size(), count);
  }
  return predicted.size() >= 3 ? spearman(predicted, measured) : NAN;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CoSA's mappings as CUDA kernels against search and cuDNN"};
  std::string layers, csv, budgets_text = "1,10,100";
  int reps = 10, correlate_layers = 4, correlate_count = 50, limit = 0;
  app.add_option("--layers", layers, "Timeloop layer list (e.g. shared/data/cosa/workloads/resnet50/unique_layers.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--reps", reps, "timed launches per kernel (median)")->check(CLI::Range(1, 1000));
  app.add_option("--budgets", budgets_text, "search time budgets, in multiples of CoSA's solve time");
  app.add_option("--correlate", correlate_layers, "layers with the model-vs-time correlation (the N with the fewest MACs)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--mappings", correlate_count, "random valid mappings timed per correlated layer")
      ->check(CLI::Range(3, 100000));
  app.add_option("--limit", limit, "only the first N layers (0: all)")->check(CLI::Range(0, 100000));
  app.add_option("--csv", csv, "write the table as CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    int gpus = 0;
    const cudaError_t e = cudaGetDeviceCount(&gpus);
    SYLVA_CHECK(e == cudaSuccess && gpus > 0, "no GPU: no CUDA device visible (",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), "); this benchmark needs one");
    const std::vector<double> budgets = parse_budgets(budgets_text);
    std::string from;
    const Arch a = this_gpu_arch(&from);
    const Mapspace ms = gpu_mapspace(a);
    const double ghz = cuda_gpu_facts(0).clock_ghz;
    std::printf("# %s (%s), float32, batch as in the layer files; times: median of %d launches, ms\n", a.name.c_str(),
                from.c_str(), reps);
    std::printf("%-20s %9s %8s %9s %8s %9s", "layer", "MMACs", "solve_s", "CoSA_ms", "GFLOP/s", "random5");
    for (double b : budgets) std::printf(" %9s", ("rand" + detail::concat(b) + "x").c_str());
    std::printf(" %9s %9s %9s %7s\n", ("hyb" + detail::concat(budgets.back()) + "x").c_str(), "cuDNN", "model_ms",
                "rho");
    std::string out_csv = "layer,macs,cosa_solve_s,cosa_ms,random5_ms";
    for (double b : budgets) out_csv += detail::concat(",random_", b, "x_ms");
    out_csv += detail::concat(",hybrid_", budgets.back(), "x_ms,cudnn_ms,model_ms,spearman\n");
    std::vector<Problem> problems;
    for (const std::string& file : read_layer_list(layers)) problems.push_back(read_problem(file));
    std::vector<std::pair<int64_t, std::string>> by_macs;
    for (const Problem& p : problems) by_macs.emplace_back(p.macs(), p.name);
    std::sort(by_macs.begin(), by_macs.end());
    std::vector<Geomean> vs_search(budgets.size() + 2);
    Geomean vs_cudnn;
    double solve_max = 0, solve_sum = 0;
    std::vector<double> rhos;
    int done = 0;
    for (const Problem& p : problems) {
      if (limit > 0 && done >= limit) break;
      LayerData d = layer_data(p);
      const Result r = schedule(p, a, ms, {}, cpu_limits());
      solve_max = std::max(solve_max, r.solve_seconds);
      solve_sum += r.solve_seconds;
      const double cosa_ms = time_mapping(p, r.mapping, a, d, reps) * 1e3;
      std::vector<double> search_ms;
      const auto run_search = [&](const SearchResult& s) {
        search_ms.push_back(s.found ? time_mapping(p, s.mapping, a, d, reps) * 1e3 : NAN);
      };
      run_search(random_search(p, a, ms, {.valid = 5, .seed = 1}));
      for (double b : budgets) run_search(random_search(p, a, ms, {.seconds = b * r.solve_seconds, .seed = 2}));
      run_search(hybrid_search(p, a, ms, {.threads = 0, .seconds = budgets.back() * r.solve_seconds, .seed = 3}));
      const double cudnn_ms = time_cudnn(p, d, reps) * 1e3;
      bool correlate_this = false;
      for (size_t i = 0; i < by_macs.size() && static_cast<int>(i) < correlate_layers; ++i)
        correlate_this = correlate_this || by_macs[i].second == p.name;
      const double rho = correlate_this ? correlate(p, a, ms, d, correlate_count) : NAN;
      if (correlate_this) rhos.push_back(rho);
      const double model_ms = static_cast<double>(r.evaluation.cycles) / ghz * 1e-6;
      std::printf("%-20s %9.1f %8.3f %9.4f %8.1f", p.name.c_str(), static_cast<double>(p.macs()) * 1e-6,
                  r.solve_seconds, cosa_ms, 2.0 * static_cast<double>(p.macs()) / cosa_ms * 1e-6);
      for (double v : search_ms) std::printf(" %9.4f", v);
      std::printf(" %9.4f %9.4f %7.3f\n", cudnn_ms, model_ms, rho);
      std::fflush(stdout);
      out_csv += detail::concat(p.name, ",", p.macs(), ",", r.solve_seconds, ",", cosa_ms);
      for (size_t i = 0; i < search_ms.size(); ++i) {
        out_csv += detail::concat(",", search_ms[i]);
        vs_search[i].add(search_ms[i] / cosa_ms);
      }
      out_csv += detail::concat(",", cudnn_ms, ",", model_ms, ",", rho, "\n");
      vs_cudnn.add(cosa_ms / cudnn_ms);
      ++done;
    }
    print_search_geomeans(done, vs_search, budgets);
    std::printf("geomean of CoSA time / cuDNN time (> 1: cuDNN is faster): %.2f\n", vs_cudnn.value());
    std::printf("CoSA solve time per layer: mean %.3f s, max %.3f s\n", solve_sum / std::max(done, 1), solve_max);
    if (!rhos.empty()) {
      std::printf("Spearman(predicted, measured) over %d random mappings on %zu layers:", correlate_count, rhos.size());
      for (double v : rhos) std::printf(" %.2f", v);
      std::printf("\n");
    }
    if (!csv.empty()) write_file_atomically(csv, out_csv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
