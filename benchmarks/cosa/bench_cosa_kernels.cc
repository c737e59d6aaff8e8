// CoSA's mappings as real CPU kernels (docs/benchmarks.md, "CoSA kernels on
// this CPU"). Per layer, on cpu_arch(this machine) with cpu_mapspace:
// CoSA's mapping, random-5, random search and the hybrid mapper at time
// budgets of CoSA's solve time, every mapping realised by the same
// generator (cosa::run_conv) and timed; CoSA's mapping also on
// channels-last data (cosa::run_conv_channels_last: no copies); the same
// layer through oneDNN (its own blocked layouts, nhwc, and the plain
// layouts run_conv uses; reorders outside the timing); and for
// the first --correlate layers, the Spearman rank correlation between the
// model's predicted cycles and the measured time of random valid mappings.
// The searches rank mappings on the analytical model, as CoSA's paper ran
// them; only the chosen mapping is timed. With --gemm the workloads are
// GEMMs (cosa::gemm_problem, run by cosa::run_gemm) against oneDNN's
// sgemm, the kernel behind Sylva's float32 matmul.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <dnnl.h>
#include <dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "sylva/core/denormals.h"
#include "sylva/core/device.h"
#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/cosa_search.h"

using namespace sylva;
using namespace sylva::cosa;
using namespace sylva::cosa::bench;

namespace {

// A convolution's weights, inputs and outputs in run_conv's layouts, or a
// GEMM's B (w), A (in) and C (out), row-major.
struct LayerData {
  bool gemm = false;
  std::vector<float> w, in, out, ref;
  PackedWeights packed;  // a convolution's weights packed once (empty: packed by every call)
};

LayerData layer_data(const Problem& p, bool gemm) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  LayerData d;
  d.gemm = gemm;
  d.w.resize(static_cast<size_t>(weight_size(p)));
  d.in.resize(static_cast<size_t>(input_size(p)));
  d.out.resize(static_cast<size_t>(output_size(p)));
  for (float& x : d.w) x = u(rng);
  for (float& x : d.in) x = u(rng);
  d.ref.resize(d.out.size());
  if (!gemm) {
    reference_conv(p, d.w.data(), d.in.data(), d.ref.data());
    return d;
  }
  const int64_t m = p.bounds[N], n = p.bounds[K], k = p.bounds[C];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l)
        acc += static_cast<double>(d.in[static_cast<size_t>(i * k + l)]) * d.w[static_cast<size_t>(l * n + j)];
      d.ref[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
    }
  return d;
}

// Times run_conv (run_gemm) on mapping m and checks it against the
// reference (a wrong kernel is an error, not a number).
Timing time_mapping(const Problem& p, const Mapping& m, const Arch& a, LayerData& d, int reps, int threads,
                    double long_s = 0.5) {
  const Timing t = time_it(
      [&] {
        if (d.gemm)
          run_gemm(p, m, a, d.in.data(), d.w.data(), d.out.data(), threads);
        else if (!d.packed.packed.empty())
          run_conv(p, m, a, d.packed, d.in.data(), d.out.data(), threads);
        else
          run_conv(p, m, a, d.w.data(), d.in.data(), d.out.data(), threads);
      },
      reps, long_s);
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-4, "[bench_cosa_kernels] ", p.name, ": run_conv is off the reference by ", err);
  return t;
}

// CoSA's kernel on channels-last data: the inputs converted once, outside
// the timing (as oneDNN's are for its blocked and nhwc runs), the outputs
// converted back after it and checked.
Timing time_channels_last(const Problem& p, const Mapping& m, const Arch& a, LayerData& d, int reps, int threads) {
  std::vector<float> in(d.in.size()), out(d.out.size());
  inputs_to_channels_last(p, d.in.data(), in.data(), threads);
  const Timing t =
      time_it([&] { run_conv_channels_last(p, m, a, d.packed, in.data(), out.data(), threads); }, reps);
  outputs_from_channels_last(p, out.data(), d.out.data(), threads);
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-4, "[bench_cosa_kernels] ", p.name, ": run_conv_channels_last is off the reference by ", err);
  return t;
}

// The activations' layout oneDNN's convolution runs on: its own choice
// (blocked), nhwc, or run_conv's plain nchw. The weights are its choice
// (reordered once) except for nchw, which reads run_conv's plain ones.
enum class DnnlLayout { blocked, nhwc, nchw };

// The layer through oneDNN's direct convolution in `layout` (reorders outside the timing).
Timing time_onednn(const Problem& p, LayerData& d, int reps, DnnlLayout layout) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const auto& B = p.bounds;
  const auto [wi, hi] = input_extents(p);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl::memory::dims src_d{B[N], B[C], wi, hi}, wei_d{B[K], B[C], B[R], B[S]}, dst_d{B[N], B[K], B[P], B[Q]};
  const dnnl::memory::desc src_u(src_d, dt::f32, tag::nchw), wei_u(wei_d, dt::f32, tag::oihw),
      dst_u(dst_d, dt::f32, tag::nchw);
  const auto pick = [&](const dnnl::memory::dims& dims, const dnnl::memory::desc& plain, bool activation) {
    if (layout == DnnlLayout::nchw) return plain;
    return dnnl::memory::desc(dims, dt::f32, layout == DnnlLayout::nhwc && activation ? tag::nhwc : tag::any);
  };
  const dnnl::convolution_forward::desc cd(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, pick(src_d, src_u, true),
      pick(wei_d, wei_u, false), pick(dst_d, dst_u, true), {p.w_stride, p.h_stride}, {p.w_dilation - 1, p.h_dilation - 1}, {0, 0},
      {0, 0});
  const dnnl::convolution_forward::primitive_desc pd(cd, eng);
  dnnl::memory src_user(src_u, eng, d.in.data()), wei_user(wei_u, eng, d.w.data()), dst_user(dst_u, eng, d.out.data());
  dnnl::memory src(pd.src_desc(), eng), wei(pd.weights_desc(), eng), dst(pd.dst_desc(), eng);
  dnnl::reorder(src_user, src).execute(s, src_user, src);
  dnnl::reorder(wei_user, wei).execute(s, wei_user, wei);
  const dnnl::convolution_forward conv(pd);
  const Timing t = time_it(
      [&] {
        conv.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
        s.wait();
      },
      reps);
  dnnl::reorder(dst, dst_user).execute(s, dst, dst_user);
  s.wait();
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-4, "[bench_cosa_kernels] ", p.name, ": oneDNN is off the reference by ", err);
  return t;
}

// The GEMM through oneDNN's sgemm (row-major, as the CPU backend calls it;
// it runs on OMP_NUM_THREADS threads).
Timing time_sgemm(const Problem& p, LayerData& d, int reps) {
  const int64_t m = p.bounds[N], n = p.bounds[K], k = p.bounds[C];
  const Timing t = time_it(
      [&] {
        SYLVA_CHECK(dnnl_sgemm('N', 'N', m, n, k, 1.0f, d.in.data(), k, d.w.data(), n, 0.0f, d.out.data(), n) ==
                        dnnl_success,
                    "[bench_cosa_kernels] ", p.name, ": oneDNN sgemm failed");
      },
      reps);
  const double err = max_rel_error(d.out, d.ref);
  SYLVA_CHECK(err < 1e-4, "[bench_cosa_kernels] ", p.name, ": oneDNN sgemm is off the reference by ", err);
  return t;
}

// "64x640x256,1x1000x2048" as GEMM problems.
std::vector<Problem> parse_gemms(const std::string& text) {
  std::vector<Problem> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    out.push_back(parse_gemm(text.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

// Spearman's rho against measured time over `count` random valid mappings
// (each the median of 3 runs, or one run if it takes over 50 ms): of the
// analytical model's cycles, and of estimate_kernel's.
struct Rho {
  double model = NAN, kernel = NAN;
};
Rho correlate(const Problem& p, const Arch& a, const Mapspace& ms, LayerData& d, int count, int threads) {
  std::mt19937_64 rng(7);
  std::vector<double> predicted, estimated, measured;
  while (static_cast<int>(predicted.size()) < count) {
    const Mapping m = random_mapping(p, a, ms, rng);
    if (!fits_fanout(m, a)) continue;
    const Evaluation e = evaluate(m, p, a);
    if (!e.valid) continue;
    predicted.push_back(static_cast<double>(e.cycles));
    estimated.push_back(estimate_kernel(p, m, threads).cycles);
    measured.push_back(time_mapping(p, m, a, d, 3, threads, 0.05).median);
    if (predicted.size() % 50 == 0)
      std::fprintf(stderr, "  %s: %zu of %d random mappings timed\n", p.name.c_str(), predicted.size(), count);
  }
  return {spearman(predicted, measured), spearman(estimated, measured)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CoSA's mappings as CPU kernels against search and oneDNN"};
  std::string layers, gemms, csv;
  int reps = 5, threads = 0, correlate_layers = 4, correlate_count = 200, limit = 0;
  std::string budgets_text = "1,10,100";
  auto* layers_opt =
      app.add_option("--layers", layers, "Timeloop layer list (e.g. shared/data/cosa/workloads/resnet50/unique_layers.yaml)")
          ->check(CLI::ExistingFile);
  app.add_option("--gemm", gemms, "GEMMs instead of layers: m x n x k items, e.g. 64x640x256,1x1000x2048")
      ->excludes(layers_opt);
  app.add_option("--reps", reps, "timed runs per kernel (median)")->check(CLI::Range(1, 1000));
  app.add_option("--threads", threads, "run_conv's threads (0: the usable cores; oneDNN takes OMP_NUM_THREADS)")->check(CLI::Range(0, 1024));
  app.add_option("--budgets", budgets_text, "search time budgets, in multiples of CoSA's solve time");
  app.add_option("--correlate", correlate_layers,
                 "layers with the model-vs-time correlation: the N with the fewest MACs (random mappings are slow)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--mappings", correlate_count, "random valid mappings timed per correlated layer")
      ->check(CLI::Range(3, 100000));
  app.add_option("--limit", limit, "only the first N layers (0: all)")->check(CLI::Range(0, 100000));
  app.add_option("--csv", csv, "write the table as CSV");
  bool pack_per_call = false;
  double blocks_weight = cpu_objective().blocks;
  app.add_option("--blocks-weight", blocks_weight,
                 "CoSA's weight on the log of the kernel's blocks (ObjectiveWeights::blocks; 0: CoSA's published objective)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--pack-per-call", pack_per_call,
               "convolutions: pack the weights inside every timed call (default: once per layer, outside the timing, "
               "as oneDNN's blocked weights are reordered once; the pack_ms column times that once)");
  CLI11_PARSE(app, argc, argv);
  if (layers.empty() && gemms.empty()) {
    std::fprintf(stderr, "error: give --layers FILE or --gemm MxNxK,...\n");
    return 2;
  }
  try {
    const std::vector<double> budgets = parse_budgets(budgets_text);
    set_flush_denormals(true);
    const int t = threads > 0 ? threads : usable_cpu_cores();
    const Arch a = this_cpu_arch();
    const Mapspace ms = cpu_mapspace(a);
    const bool gemm = !gemms.empty();
    std::printf("# %s, %d threads, float32, %s; times: median of %d runs, ms\n", a.name.c_str(), t,
                gemm            ? "GEMMs against oneDNN's sgemm (dnnl_nchw: -)"
                : pack_per_call ? "batch as in the layer files, weights packed in every call"
                                : "batch as in the layer files, weights packed once (pack_ms, not in the kernels' times)",
                reps);
    std::printf("%-20s %9s %8s %9s %7s %9s", "layer", "MMACs", "solve_s", "CoSA_ms", "GFLOP/s", "random5");
    for (double b : budgets) std::printf(" %9s", ("rand" + detail::concat(b) + "x").c_str());
    std::printf(" %9s %9s %9s %9s %9s %9s %9s %8s %7s %7s\n", ("hyb" + detail::concat(budgets.back()) + "x").c_str(),
                "oneDNN", "dnnl_nchw", "CoSA_cl", "dnnl_nhwc", "model_ms", "kernel_ms", "pack_ms", "rho", "rho_est");
    std::string out_csv = "layer,macs,cosa_solve_s,cosa_ms,random5_ms";
    for (double b : budgets) out_csv += detail::concat(",random_", b, "x_ms");
    out_csv += detail::concat(",hybrid_", budgets.back(),
                              "x_ms,onednn_ms,onednn_nchw_ms,cosa_channels_last_ms,onednn_nhwc_ms,model_ms,"
                              "kernel_estimate_ms,pack_ms,spearman,spearman_kernel_estimate\n");
    std::vector<Geomean> vs_search(budgets.size() + 2);  // random-5, random at each budget, hybrid: search / CoSA
    Geomean vs_dnnl, vs_dnnl_nchw, cl_vs_dnnl, cl_vs_dnnl_nhwc;
    double solve_max = 0, solve_sum = 0;
    std::vector<Rho> rhos;
    std::vector<Problem> problems;
    if (gemm)
      problems = parse_gemms(gemms);
    else
      for (const std::string& file : read_layer_list(layers)) problems.push_back(read_problem(file));
    std::vector<std::pair<int64_t, std::string>> by_macs;
    for (const Problem& p : problems) by_macs.emplace_back(p.macs(), p.name);
    std::sort(by_macs.begin(), by_macs.end());
    std::vector<std::string> correlated;
    for (size_t i = 0; i < by_macs.size() && static_cast<int>(i) < correlate_layers; ++i)
      correlated.push_back(by_macs[i].second);
    int done = 0;
    const double ghz = nominal_ghz();  // the model's cycles as time
    for (const Problem& p : problems) {
      if (limit > 0 && done >= limit) break;
      LayerData d = layer_data(p, gemm);
      double pack_ms = NAN;
      if (!gemm && !pack_per_call) {
        pack_ms = time_it([&] { d.packed = pack_weights(p, d.w.data(), t); }, reps).median * 1e3;
      }
      ObjectiveWeights w;
      w.blocks = blocks_weight;
      const Result r = schedule(p, a, ms, w, w.blocks > 0 ? cpu_limits() : SolveLimits{});
      solve_max = std::max(solve_max, r.solve_seconds);
      solve_sum += r.solve_seconds;
      const double cosa_ms = time_mapping(p, r.mapping, a, d, reps, t).median * 1e3;
      std::vector<double> search_ms;
      auto run_search = [&](const SearchResult& s) {
        search_ms.push_back(s.found ? time_mapping(p, s.mapping, a, d, reps, t).median * 1e3 : NAN);
      };
      run_search(random_search(p, a, ms, {.valid = 5, .seed = 1}));
      for (double b : budgets) run_search(random_search(p, a, ms, {.seconds = b * r.solve_seconds, .seed = 2}));
      run_search(hybrid_search(p, a, ms, {.threads = t, .seconds = budgets.back() * r.solve_seconds, .seed = 3}));
      const double dnnl_ms =
          (gemm ? time_sgemm(p, d, reps) : time_onednn(p, d, reps, DnnlLayout::blocked)).median * 1e3;
      const double nchw_ms = gemm ? NAN : time_onednn(p, d, reps, DnnlLayout::nchw).median * 1e3;
      const bool cl = !gemm && !d.packed.packed.empty();  // channels-last runs take packed weights
      const double cl_ms = cl ? time_channels_last(p, r.mapping, a, d, reps, t).median * 1e3 : NAN;
      const double nhwc_ms = cl ? time_onednn(p, d, reps, DnnlLayout::nhwc).median * 1e3 : NAN;
      const bool correlate_this = std::find(correlated.begin(), correlated.end(), p.name) != correlated.end();
      const Rho rho = correlate_this ? correlate(p, a, ms, d, correlate_count, t) : Rho{};
      if (correlate_this) rhos.push_back(rho);
      const double model_ms = static_cast<double>(r.evaluation.cycles) / ghz * 1e-6;
      const double kernel_ms = estimate_kernel(p, r.mapping, t).cycles / ghz * 1e-6;
      std::printf("%-20s %9.1f %8.3f %9.3f %7.1f", p.name.c_str(), static_cast<double>(p.macs()) * 1e-6,
                  r.solve_seconds, cosa_ms, 2.0 * static_cast<double>(p.macs()) / cosa_ms * 1e-6);
      for (double ms_ : search_ms) std::printf(" %9.3f", ms_);
      std::printf(" %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8.3f %7.3f %7.3f\n", dnnl_ms, nchw_ms, cl_ms, nhwc_ms,
                  model_ms, kernel_ms, pack_ms, rho.model, rho.kernel);
      std::fflush(stdout);
      out_csv += detail::concat(p.name, ",", p.macs(), ",", r.solve_seconds, ",", cosa_ms);
      for (size_t i = 0; i < search_ms.size(); ++i) {
        out_csv += detail::concat(",", search_ms[i]);
        vs_search[i].add(search_ms[i] / cosa_ms);
      }
      out_csv += detail::concat(",", dnnl_ms, ",", nchw_ms, ",", cl_ms, ",", nhwc_ms, ",", model_ms, ",", kernel_ms,
                                ",", pack_ms, ",", rho.model, ",", rho.kernel, "\n");
      vs_dnnl.add(cosa_ms / dnnl_ms);
      vs_dnnl_nchw.add(cosa_ms / nchw_ms);
      if (cl) {
        cl_vs_dnnl.add(cl_ms / dnnl_ms);
        cl_vs_dnnl_nhwc.add(cl_ms / nhwc_ms);
      }
      ++done;
    }
    print_search_geomeans(done, vs_search, budgets);
    if (gemm)
      std::printf("geomean of CoSA time / oneDNN sgemm time (> 1: oneDNN is faster): %.2f\n", vs_dnnl.value());
    else
      std::printf("geomean of CoSA time / oneDNN time (> 1: oneDNN is faster): blocked layouts %.2f, plain %.2f\n",
                  vs_dnnl.value(), vs_dnnl_nchw.value());
    if (!gemm && !pack_per_call)
      std::printf("geomean of CoSA on channels-last data / oneDNN (no copies in either): blocked %.2f, nhwc %.2f\n",
                  cl_vs_dnnl.value(), cl_vs_dnnl_nhwc.value());
    std::printf("CoSA solve time per layer: mean %.3f s, max %.3f s\n", solve_sum / std::max(done, 1), solve_max);
    if (!rhos.empty()) {
      std::printf("Spearman(predicted, measured) over %d random mappings on %zu layers: model", correlate_count,
                  rhos.size());
      for (const Rho& r : rhos) std::printf(" %.2f", r.model);
      std::printf("; kernel estimate");
      for (const Rho& r : rhos) std::printf(" %.2f", r.kernel);
      std::printf("\n");
    }
    if (!csv.empty()) write_file_atomically(csv, out_csv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
