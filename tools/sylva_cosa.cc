// sylva-cosa: CoSA's one-shot MIP schedule of a layer, the analytical model
// of any mapping, random-search baselines, and a whole network's table.
//
//   sylva-cosa arch [--gpu] [-o cpu.yaml]   (this CPU, --arch cpu; or the GPU, --arch gpu)
//   sylva-cosa schedule --arch A --problem P | --gemm MxNxK [--mapspace M] [--objective u,c,t,l] [--pad 7] [--run]
//                       [--emit-cuda kernel.cu] [-o map.yaml]
//   sylva-cosa evaluate --arch A --problem P --mapping map.yaml
//   sylva-cosa search --algo random|hybrid --arch A --problem P [--mapspace M] [--valid 5] [--seconds S]
//                     [--threads 2] [--victory 500] [--seed 1] [-o map.yaml]
//   sylva-cosa batch --arch A --layers net/layers.yaml [--mapspace M] [--random-valid 5] [--best-of 1000]
//                    [--hybrid-seconds 2] [--threads 2] [--pad 7] [--csv table.csv]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "command_line.h"
#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/graph/cosa_gpu_run.h"
#include "sylva/sched/cosa_gpu.h"
#include "sylva/sched/cosa_gpu_kernel.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

using namespace sylva;
using namespace sylva::cosa;

namespace {

// --arch cpu or gpu without --mapspace: cpu_mapspace or gpu_mapspace, what the kernels realise.
Mapspace mapspace_or_default(const std::string& path, const Arch& a, const std::string& arch) {
  if (!path.empty()) return read_mapspace(path, a);
  if (arch == "cpu") return cpu_mapspace(a);
  if (arch == "gpu") return gpu_mapspace(a);
  Mapspace ms;
  ms.keep.assign(a.levels.size(), {true, true, true});
  return ms;
}

void print(const char* what, const Evaluation& e, double seconds) {
  std::printf("%s: %s, %lld cycles (compute %lld), utilization %.3f, energy %.4g uJ, DRAM reads W/I/O %lld/%lld/%lld, "
              "updates %lld, %.3f s\n",
              what, e.valid ? "valid" : ("INVALID: " + e.why).c_str(), static_cast<long long>(e.cycles),
              static_cast<long long>(e.compute_cycles), e.utilization, e.energy_pj * 1e-6,
              static_cast<long long>(e.dram_reads[Weights]), static_cast<long long>(e.dram_reads[Inputs]),
              static_cast<long long>(e.dram_reads[Outputs]), static_cast<long long>(e.dram_updates), seconds);
}

// The layer, padded when --pad is given (with a note of what changed).
Problem layer(const std::string& path, int64_t pad) {
  const Problem p = read_problem(path);
  const std::string big = large_primes(p, 7);
  if (pad <= 0) {
    if (!big.empty())
      std::printf("note: %s has large prime bounds (%s); --pad 7 pads them\n", p.name.c_str(), big.c_str());
    return p;
  }
  const Problem padded = pad_problem(p, pad);
  if (padded.bounds != p.bounds)
    std::printf("note: %s padded (%s -> primes <= %lld): %.2f%% more MACs\n", p.name.c_str(), big.c_str(),
                static_cast<long long>(pad),
                100.0 * (static_cast<double>(padded.macs()) / static_cast<double>(p.macs()) - 1));
  return padded;
}

// Random float32 tensors for a layer, in run_conv's layouts.
std::vector<float> random_tensor(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Largest |got - want| relative to the largest |want|.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  return scale > 0 ? err / scale : err;
}

// The measured runs (sorted in place) beside the model's cycles at `ghz`.
void report(std::vector<double>& times, const Problem& p, double err, const Evaluation& e, double ghz,
            const char* clock) {
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("measured: median %.3f ms over %zu runs (%.3f..%.3f), %.2f GFLOP/s; max error %.1e of the largest output\n",
              median * 1e3, times.size(), times.front() * 1e3, times.back() * 1e3,
              2.0 * static_cast<double>(p.macs()) / median * 1e-9, err);
  std::printf("model: %lld cycles = %.3f ms at %.2f GHz (%s); measured / predicted %.2f\n",
              static_cast<long long>(e.cycles), static_cast<double>(e.cycles) / ghz * 1e-6, ghz, clock,
              median / (static_cast<double>(e.cycles) / ghz * 1e-9));
}

// --run: the mapping as a kernel (float32, random data): checked against the
// plain convolution, timed (median of 5 after a warm-up), and set beside the
// model. A GEMM runs through run_gemm (w is B [k][n], in is A [m][k]).
void run_kernel(const Problem& p, const Mapping& m, const Arch& a, const Evaluation& e) {
  std::mt19937_64 rng(1);
  const std::vector<float> w = random_tensor(weight_size(p), rng), in = random_tensor(input_size(p), rng);
  std::vector<float> out(static_cast<size_t>(output_size(p))), ref(out.size());
  const bool gemm = is_gemm(p);
  const auto run = [&] {
    if (gemm)
      run_gemm(p, m, a, in.data(), w.data(), out.data());
    else
      run_conv(p, m, a, w.data(), in.data(), out.data());
  };
  run();
  std::vector<float> conv_w = w;  // a GEMM's B [k][n] as the convolution's weights [K = n][C = k]
  if (gemm)
    for (int64_t c = 0; c < p.bounds[C]; ++c)
      for (int64_t k = 0; k < p.bounds[K]; ++k)
        conv_w[static_cast<size_t>(k * p.bounds[C] + c)] = w[static_cast<size_t>(c * p.bounds[K] + k)];
  reference_conv(p, conv_w.data(), in.data(), ref.data());
  std::vector<double> times;
  for (int k = 0; k < 5; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  report(times, p, relative_error(out, ref), e, nominal_ghz(), "nominal");
}

// --run on --arch gpu: the generated CUDA kernel (float32, run_conv's
// layouts, a GEMM as the convolution it is) on CUDA device 0: checked
// against the plain convolution, 5 launches timed after a warm-up.
void run_gpu_kernel(const GpuConvPlan& plan, const Evaluation& e) {
  const Problem& p = plan.problem;
  std::mt19937_64 rng(1);
  const std::vector<float> w = random_tensor(weight_size(p), rng), in = random_tensor(input_size(p), rng);
  std::vector<float> out(static_cast<size_t>(output_size(p))), ref(out.size());
  GpuRun run = run_gpu_conv(plan, w.data(), in.data(), out.data(), 6);
  reference_conv(p, w.data(), in.data(), ref.data());
  std::printf("%s: NVRTC %.3f s\n", run.device.c_str(), run.compile_seconds);
  std::vector<double> times(run.seconds.begin() + 1, run.seconds.end());
  report(times, p, relative_error(out, ref), e, cuda_gpu_facts(0).clock_ghz, "the SM clock");
}

// "u,c,t,l" or "u,c,t,l,b"; empty: the defaults, cpu_objective() on --arch cpu.
ObjectiveWeights parse_weights(const std::string& text, bool cpu) {
  ObjectiveWeights w = cpu ? cpu_objective() : ObjectiveWeights{};
  if (text.empty()) return w;
  w.blocks = 0;
  const int n = std::sscanf(text.c_str(), "%lf,%lf,%lf,%lf,%lf", &w.utilization, &w.compute, &w.traffic, &w.latency,
                            &w.blocks);
  SYLVA_CHECK(n == 4 || n == 5, "[sylva-cosa] --weights is utilization,compute,traffic,latency[,blocks] (e.g. 1,1,1,1), "
              "got '", text, "'");
  return w;
}

}  // namespace

// One method's row in the batch table.
struct Outcome {
  Evaluation evaluation;
  double seconds = 0;
  bool found = false;
};

// Geomean ratios of a baseline's cycles and energy to CoSA's, over the
// layers both found a valid mapping for.
struct Ratio {
  double log_cycles = 0, log_energy = 0, seconds = 0;
  int n = 0, energy_n = 0;
  void add(const Outcome& cosa, const Outcome& other) {
    seconds += other.seconds;
    if (!cosa.found || !other.found) return;
    log_cycles += std::log(static_cast<double>(other.evaluation.cycles) / static_cast<double>(cosa.evaluation.cycles));
    ++n;
    if (std::isfinite(cosa.evaluation.energy_pj) && std::isfinite(other.evaluation.energy_pj)) {
      log_energy += std::log(other.evaluation.energy_pj / cosa.evaluation.energy_pj);
      ++energy_n;
    }
  }
  std::string summary(const std::string& name) const {
    char line[256];
    std::snprintf(line, sizeof line, "%-16s cycles %6.2fx, energy %6.2fx (%d layers), %.1f s in all", name.c_str(),
                  n ? std::exp(log_cycles / n) : NAN, energy_n ? std::exp(log_energy / energy_n) : NAN, n, seconds);
    return line;
  }
};

void cell(std::FILE* f, const Outcome& o) {
  if (!o.found) {
    std::fprintf(f, " %12s %10s %7s", "none", "-", "-");
    return;
  }
  std::fprintf(f, " %12lld %10.2f %7.2f", static_cast<long long>(o.evaluation.cycles), o.evaluation.energy_pj * 1e-6,
               o.seconds);
}

int main(int argc, char** argv) {
  CLI::App app{"CoSA: one-shot MIP scheduling of layers on Timeloop-style accelerators (CBC), the analytical model, "
               "random search"};
  app.require_subcommand(1);
  std::string arch, problem, mapspace, mapping, out, weights, algo = "random", layers, csv;
  int valid = 5, best_of = 1000, threads = 2;
  int64_t victory = 500, pad = 0;
  double seconds = 0, hybrid_seconds = 2;
  uint64_t seed = 1;
  const auto common = [&](CLI::App* c) {
    c->add_option("--arch", arch,
                  "architecture YAML (Timeloop v1), cpu: this machine's CPU (sylva-cosa arch), or gpu: CUDA device 0, "
                  "else the shipped H200 (sylva-cosa arch --gpu)")
        ->required()->check(CLI::Validator(
            [](std::string& v) {
              return v == "cpu" || v == "gpu" || std::filesystem::is_regular_file(v)
                         ? std::string()
                         : "File does not exist: " + v + " (give a Timeloop v1 arch YAML, cpu or gpu)";
            },
            "FILE|cpu"));
    c->add_option("--mapspace", mapspace, "keep/bypass constraints (default: every level keeps every tensor)")
        ->check(CLI::ExistingFile);
  };
  CLI::App* arch_cmd = app.add_subcommand("arch", "this machine's CPU (--arch cpu) or GPU (--arch gpu) as a Timeloop v1 "
                                                  "architecture");
  arch_cmd->add_option("-o,--output", out, "write it here (default: print it)")->check(cli::kWritablePath);
  bool gpu = false;
  arch_cmd->add_flag("--gpu", gpu, "the GPU's (CUDA device 0, else the shipped H200) instead of the CPU's");
  CLI::App* sched = app.add_subcommand("schedule", "solve CoSA's MIP for a layer and write the mapping");
  common(sched);
  std::string gemm;
  auto* problem_opt = sched->add_option("--problem", problem, "layer YAML")->check(CLI::ExistingFile);
  sched->add_option("--gemm", gemm, "a GEMM instead of a layer: m x n x k, e.g. 64x640x256 (C[m][n] = A[m][k] B[k][n])")
      ->excludes(problem_opt);
  sched->add_option("--weights,--objective", weights,
                    "objective weights utilization,compute,traffic,latency[,blocks] (default 1,1,1,1; on --arch cpu 1,1,1,1,1)");
  sched->add_option("--pad", pad, "pad bounds to primes <= this first (0: no padding)")
      ->check(cli::kNonNegative)->capture_default_str();
  sched->add_option("-o,--output", out, "write the mapping here (Timeloop v1 mapping YAML)")->check(cli::kWritablePath);
  bool run = false;
  sched->add_flag("--run", run, "also run the mapping as a kernel (float32; --arch gpu: a CUDA kernel on device 0): "
                                "checked, timed, beside the model");
  std::string cuda_out;
  sched->add_option("--emit-cuda", cuda_out, "--arch gpu: write the mapping's generated CUDA kernel here")
      ->check(cli::kWritablePath);
  CLI::App* eval = app.add_subcommand("evaluate", "the analytical model of a mapping");
  common(eval);
  eval->add_option("--problem", problem, "layer YAML")->required()->check(CLI::ExistingFile);
  eval->add_option("--mapping", mapping, "mapping YAML")->required()->check(CLI::ExistingFile);
  CLI::App* search = app.add_subcommand("search", "random or hybrid (Timeloop-like) search on the same model");
  common(search);
  search->add_option("--problem", problem, "layer YAML")->required()->check(CLI::ExistingFile);
  search->add_option("--algo", algo, "random | hybrid")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "hybrid"}));
  search->add_option("--valid", valid, "random: stop after this many valid mappings (the paper's random-5: 5)")
      ->check(cli::kPositive)->capture_default_str();
  search->add_option("--seconds", seconds, "stop at this time budget (0: none; random: instead of --valid)")
      ->check(cli::kNonNegative)->capture_default_str();
  search->add_option("--threads", threads, "hybrid: threads (0: all cores)")->check(CLI::Range(0, 1024))
      ->capture_default_str();
  search->add_option("--victory", victory, "hybrid: a thread stops after this many valid mappings in a row without "
                                           "improving")->check(cli::kPositive)->capture_default_str();
  search->add_option("--seed", seed, "random seed")->capture_default_str();
  search->add_option("-o,--output", out, "write the best mapping here")->check(cli::kWritablePath);
  CLI::App* batch = app.add_subcommand("batch", "CoSA, random-5, best of N random and hybrid search at a time "
                                                "budget over a network's layers.yaml");
  common(batch);
  batch->add_option("--layers", layers, "a network's layers.yaml (layer names; files beside it)")->required()
      ->check(CLI::ExistingFile);
  batch->add_option("--weights,--objective", weights, "objective weights utilization,compute,traffic,latency[,blocks]");
  batch->add_option("--random-valid", valid, "random search: valid mappings per layer")->check(cli::kPositive)
      ->capture_default_str();
  batch->add_option("--best-of", best_of, "the second random search: best of this many valid mappings")
      ->check(cli::kPositive)->capture_default_str();
  batch->add_option("--hybrid-seconds", hybrid_seconds, "hybrid search: time budget per layer")
      ->check(cli::kPositive)->capture_default_str();
  batch->add_option("--threads", threads, "hybrid search: threads (0: all cores)")->check(CLI::Range(0, 1024))
      ->capture_default_str();
  batch->add_option("--pad", pad, "CoSA: pad bounds to primes <= this first (0: no padding)")
      ->check(cli::kNonNegative)->capture_default_str();
  batch->add_option("--csv", csv, "also write the table here")->check(cli::kWritablePath);
  batch->add_option("--seed", seed, "random seed (random-5: seed, best of N: seed + 1, hybrid: seed + 2)")
      ->capture_default_str();
  if (const int rc = cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    if (*arch_cmd) {
      std::string from;
      const Arch machine = gpu ? this_gpu_arch(&from) : this_cpu_arch(&from);
      const std::string yaml = "# " + machine.name + ", from " + from + "\n" + arch_yaml(machine);
      if (!out.empty()) write_file_atomically(out, yaml);
      else std::fputs(yaml.c_str(), stdout);
      return 0;
    }
    // The layer's flags before the architecture's file, so that each error names its own flag.
    SYLVA_CHECK(!*sched || !problem.empty() || !gemm.empty(), "[sylva-cosa] schedule needs --problem FILE or --gemm MxNxK");
    SYLVA_CHECK(cuda_out.empty() || arch == "gpu", "[sylva-cosa] --emit-cuda needs --arch gpu (got --arch ", arch, ")");
    const Problem gemm_problem = gemm.empty() ? Problem{} : parse_gemm(gemm);
    const Arch a = arch == "cpu" ? this_cpu_arch() : arch == "gpu" ? this_gpu_arch() : read_arch(arch);
    const Mapspace ms = mapspace_or_default(mapspace, a, arch);
    if (*sched) {
      const Problem p = gemm.empty() ? layer(problem, pad) : gemm_problem;
      const ObjectiveWeights w = parse_weights(weights, arch == "cpu");
      // The kernels' architectures get the CPU's limits (the GPU's exact solve takes up to 15 s).
      const Result r = schedule(p, a, ms, w, w.blocks > 0 || arch == "gpu" ? cpu_limits() : SolveLimits{});
      std::printf("CoSA MIP: %d variables, %d constraints, objective %.4f%s\n", r.variables, r.constraints, r.objective,
                  r.optimal ? "" : " (stopped at the time limit: best found, not proven optimal)");
      print(p.name.c_str(), r.evaluation, r.solve_seconds);
      if (!out.empty()) write_file_atomically(out, mapping_yaml(r.mapping));
      else if (!run) std::fputs(mapping_yaml(r.mapping).c_str(), stdout);
      if (arch == "gpu" && (run || !cuda_out.empty())) {
        const GpuConvPlan plan = gpu_conv_plan(p, r.mapping, a);
        std::fputs(describe(plan).c_str(), stdout);
        if (!cuda_out.empty()) write_file_atomically(cuda_out, gpu_conv_source(plan, GpuReal::f32));
        if (run) run_gpu_kernel(plan, r.evaluation);
      } else if (run) {
        run_kernel(p, r.mapping, a, r.evaluation);
      }
    } else if (*eval) {
      const Problem p = read_problem(problem);
      print(p.name.c_str(), evaluate(read_mapping(mapping, a), p, a), 0.0);
    } else if (*search) {
      const Problem p = read_problem(problem);
      const SearchResult s =
          algo == "random"
              ? random_search(p, a, ms, {.valid = valid, .seconds = seconds, .seed = seed})
              : hybrid_search(p, a, ms, {.threads = threads, .victory = victory, .seconds = seconds, .seed = seed});
      std::printf("%s search: %lld mappings drawn, %lld valid\n", algo.c_str(), static_cast<long long>(s.sampled),
                  static_cast<long long>(s.valid));
      SYLVA_CHECK(s.found, "[sylva-cosa] ", algo, " search found no valid mapping of '", p.name, "'");
      print(p.name.c_str(), s.evaluation, s.seconds);
      if (!out.empty()) write_file_atomically(out, mapping_yaml(s.mapping));
    } else if (*batch) {
      std::string csv_text = "layer,method,found,cycles,energy_pj,seconds\n";
      std::printf("%-20s %12s %10s %7s %12s %10s %7s %12s %10s %7s %12s %10s %7s\n", "layer", "CoSA cycles", "uJ", "s",
                  ("random-" + std::to_string(valid)).c_str(), "uJ", "s", ("best-" + std::to_string(best_of)).c_str(),
                  "uJ", "s", ("hybrid-" + detail::concat(hybrid_seconds) + "s").c_str(), "uJ", "s");
      Ratio vs_random, vs_best, vs_hybrid;
      double cosa_s = 0;
      int layers_done = 0;
      const auto found = [](const SearchResult& r) { return Outcome{r.evaluation, r.seconds, r.found}; };
      for (const std::string& file : read_layer_list(layers)) {
        const Problem p = read_problem(file);
        const ObjectiveWeights w = parse_weights(weights, arch == "cpu");
        const Result r = schedule(pad > 0 ? pad_problem(p, pad) : p, a, ms, w, w.blocks > 0 ? cpu_limits() : SolveLimits{});
        const Outcome cosa{r.evaluation, r.solve_seconds, r.evaluation.valid};
        const Outcome rnd = found(random_search(p, a, ms, {.valid = valid, .seed = seed}));
        const Outcome best = found(random_search(p, a, ms, {.valid = best_of, .seed = seed + 1}));
        const Outcome hyb = found(hybrid_search(
            p, a, ms, {.threads = threads, .victory = INT64_MAX, .seconds = hybrid_seconds, .seed = seed + 2}));
        std::printf("%-20s", p.name.c_str());
        for (const Outcome* o : {&cosa, &rnd, &best, &hyb}) cell(stdout, *o);
        std::printf("%s\n", cosa.found ? "" : "  (CoSA mapping INVALID in the model)");
        std::fflush(stdout);
        const char* names[] = {"cosa", "random", "best_of", "hybrid"};
        int k = 0;
        for (const Outcome* o : {&cosa, &rnd, &best, &hyb})
          csv_text += detail::concat(p.name, ",", names[k++], ",", o->found ? 1 : 0, ",", o->evaluation.cycles, ",",
                                     o->evaluation.energy_pj, ",", o->seconds, "\n");
        vs_random.add(cosa, rnd);
        vs_best.add(cosa, best);
        vs_hybrid.add(cosa, hyb);
        cosa_s += r.solve_seconds;
        ++layers_done;
      }
      std::printf("%d layers on %s; geomean of (baseline / CoSA), > 1 means CoSA is better; CoSA %.1f s in all "
                  "(%.2f s per layer)\n",
                  layers_done, a.name.c_str(), cosa_s, cosa_s / std::max(layers_done, 1));
      std::printf("  %s\n  %s\n  %s\n", vs_random.summary("random-" + std::to_string(valid)).c_str(),
                  vs_best.summary("best of " + std::to_string(best_of)).c_str(),
                  vs_hybrid.summary("hybrid " + detail::concat(hybrid_seconds) + " s").c_str());
      if (!csv.empty()) write_file_atomically(csv, csv_text);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
