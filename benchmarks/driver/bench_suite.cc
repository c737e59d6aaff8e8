// bench_suite: runs workloads × strategies × batch sizes × hidden sizes
// (× Tree-FC leaves), repeats each configuration, and reports the median
// throughput with its spread, the split into graph construction and
// computation, the time in memory movement, and peak resident memory; as a
// table on stdout and as CSV / JSON (scripts/plot_benchmarks.py turns the
// CSV into docs/benchmarks.md's figures and tables).
//
// Throughput is timed by a wall clock around each whole training step:
// forward, backward and, with --optimizer, the update (each system's own
// optimiser). On a device (--device cuda) the clock stops after a device
// synchronisation (Strategy::synchronize), so queued kernels are counted,
// and the update runs in the device's optimiser kernels (parameters stay
// there). Strategies are interleaved: every strategy is made once per
// hidden size with its own copy of the initial parameters, and the repeats
// of a configuration go round the strategies (s1, s2, …, s1, s2, …), each
// running the same minibatches in the same order, so slow drifts of a
// shared machine fall on all of them. Pin the process to cores with
// taskset: the header says how many cores it may use.
//
//   taskset -c 0 bench_suite --workload tree-lstm --strategies sylva,dynet-autobatch
//               --batch 1,16,64 --hidden 128 --embed 128 --optimizer adam --repeats 3 --csv out.csv
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "core_latency.h"
#include "optimisation_flags.h"
#include "strategy.h"
#if SYLVA_HAVE_TORCH
#include "torch_strategies.h"
#endif
#if SYLVA_HAVE_DYNET
#include "dynet_strategies.h"
#endif

namespace {

using namespace sylva;
using namespace sylva::bench;

struct Options {
  std::string workload = "tree-lstm";
  std::vector<std::string> strategies;
  std::vector<int64_t> batches{64};
  std::vector<int64_t> hiddens;
  std::vector<int32_t> leaves{256};
  int64_t embed = 0;  // 0: the workload's default
  int64_t layers = 1;
  std::string mode = "train";
  int repeats = 3;
  double min_time = 1.0;
  bool whole_epoch = false;  // each repeat also runs every minibatch of the data once
  int warmup = 1;
  int threads = 1;
  std::string device = "cpu";
  bool measure_movement = false;
  bool estimate_epoch = false;
  std::string sweep = "batch";
  std::string data;
  std::string csv, json;
  int64_t max_samples = 0;
  int64_t bucket = 0;  // minibatches per length-bucketing window (0: off)
  int64_t tree_fc_trees = 1024;
  uint64_t seed = 1;
  bool float64 = false;
  bool list = false;
  Optimisations optimisations = Optimisations::all();  // sylva's (the --no-* ablation flags)
  Precision precision = Precision::fp32;               // sylva's GEMMs (--precision; sylva-bf16 is always bf16)
  bool projection_in_cell = false, per_gate = false;
  std::string cell = "tai";
  std::string optimizer = "none";
  double lr = 0.001;
  int dynet_mem = 1024;
};


double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Peak resident memory of the process since the last reset, in MB. Linux
// resets the high-water mark when "5" is written to /proc/self/clear_refs;
// where that is not allowed the figure is the peak since the process began.
// It includes what the process holds anyway (libraries, the dataset), so
// run one strategy per process to compare strategies (bench_figures.sh does).
bool reset_peak_rss() {
  malloc_trim(0);  // hand freed heap back first, so earlier configurations do not count
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct Row {
  std::string workload, strategy, mode, unit, sweep;
  int64_t batch = 0, hidden = 0, leaves = 0;
  int threads = 1, repeats = 0;
  std::string device = "cpu", optimizer = "none";
  double samples_per_s = 0, samples_min = 0, samples_max = 0;
  double units_per_s = 0, units_min = 0, units_max = 0;
  double build_s = 0, compute_s = 0, movement_s = -1, build_share = 0, movement_share = -1;
  double update_s = 0, step_s = 0;  // medians: the optimiser update, and the whole step by wall clock
  int64_t kernels = -1;
  double peak_rss_mb = 0, epoch_s = -1, epoch_compute_s = -1, loss = 0;
  double peak_device_mb = -1;  // the device memory's peak (cached blocks included); -1 on the CPU
  double values_mb = -1;       // Strategy::values_mb(): activations and their gradients; -1 unknown
  double pools_mb = -1;        // Strategy::pools_mb(): what a pooled system reserved in all; -1 none
  // The cross-core round trip just before and just after the configuration
  // ran (core_latency.h), with --threads 2 or more; -1 not measured.
  double core_rtt_before_ns = -1, core_rtt_after_ns = -1;
};

const char* kCsvHeader =
    "workload,strategy,mode,batch,hidden,leaves,threads,repeats,samples_per_s,samples_per_s_min,samples_per_s_max,"
    "units_per_s,units_per_s_min,units_per_s_max,unit,build_s,compute_s,movement_s,build_share,movement_share,"
    "kernels,peak_rss_mb,epoch_s,epoch_compute_s,loss,sweep,device,update_s,step_s,optimizer,peak_device_mb,values_mb,pools_mb,"
    "core_rtt_before_ns,core_rtt_after_ns";

std::string csv_line(const Row& r) {
  std::ostringstream o;
  o.precision(6);
  o << r.workload << ',' << r.strategy << ',' << r.mode << ',' << r.batch << ',' << r.hidden << ',' << r.leaves << ','
    << r.threads << ',' << r.repeats << ',' << r.samples_per_s << ',' << r.samples_min << ',' << r.samples_max << ','
    << r.units_per_s << ',' << r.units_min << ',' << r.units_max << ',' << r.unit << ',' << r.build_s << ','
    << r.compute_s << ',' << r.movement_s << ',' << r.build_share << ',' << r.movement_share << ',' << r.kernels << ','
    << r.peak_rss_mb << ',' << r.epoch_s << ',' << r.epoch_compute_s << ',' << r.loss << ',' << r.sweep << ','
    << r.device << ',' << r.update_s << ',' << r.step_s << ',' << r.optimizer << ',' << r.peak_device_mb << ','
    << r.values_mb << ',' << r.pools_mb << ',' << r.core_rtt_before_ns << ',' << r.core_rtt_after_ns;
  return o.str();
}

nlohmann::json to_json(const Row& r) {
  return {{"workload", r.workload}, {"strategy", r.strategy}, {"mode", r.mode}, {"batch", r.batch},
          {"hidden", r.hidden}, {"leaves", r.leaves}, {"threads", r.threads}, {"repeats", r.repeats},
          {"samples_per_s", r.samples_per_s}, {"samples_per_s_min", r.samples_min},
          {"samples_per_s_max", r.samples_max}, {"units_per_s", r.units_per_s}, {"units_per_s_min", r.units_min},
          {"units_per_s_max", r.units_max}, {"unit", r.unit}, {"build_s", r.build_s}, {"compute_s", r.compute_s},
          {"movement_s", r.movement_s}, {"build_share", r.build_share}, {"movement_share", r.movement_share},
          {"kernels", r.kernels}, {"peak_rss_mb", r.peak_rss_mb}, {"epoch_s", r.epoch_s},
          {"epoch_compute_s", r.epoch_compute_s}, {"loss", r.loss}, {"sweep", r.sweep}, {"device", r.device},
          {"update_s", r.update_s}, {"step_s", r.step_s}, {"optimizer", r.optimizer},
          {"peak_device_mb", r.peak_device_mb}, {"values_mb", r.values_mb},
          {"pools_mb", r.pools_mb}, {"core_rtt_before_ns", r.core_rtt_before_ns},
          {"core_rtt_after_ns", r.core_rtt_after_ns}};
}

StrategyOptions strategy_options(const Options& o) {
  return {.executor = {.device = Device::parse(o.device), .threads = o.threads, .optimisations = o.optimisations,
                       .precision = o.precision},
          .measure_movement = o.measure_movement, .optimizer = o.optimizer, .lr = o.lr};
}

std::unique_ptr<Strategy> make(const std::string& name, const ModelConfig& cfg, ParameterSet& ps, const Options& o) {
  if (name.rfind("libtorch", 0) == 0) {
    SYLVA_CHECK(o.device == "cpu", "[bench] the libtorch strategies run on the CPU only, not --device ", o.device);
    SYLVA_CHECK(o.optimizer == "none", "[bench] the libtorch strategies have no optimizer update; use --optimizer none");
    SYLVA_CHECK(cfg.cell == examples::TreeLstmCell::tai, "[bench] the libtorch strategies compute the tai cell only");
#if SYLVA_HAVE_TORCH
    SYLVA_CHECK(!cfg.projection_in_cell && !cfg.per_gate,
                "[bench] --projection-in-cell and --per-gate apply to the sylva strategies only");
    return make_torch_strategy(name, cfg, ps, o.threads);
#else
    SYLVA_THROW("[bench] strategy '", name, "' needs libtorch: apt-get install libtorch-dev and reconfigure");
#endif
  }
  if (name.rfind("dynet", 0) == 0) {
#if SYLVA_HAVE_DYNET
    return make_dynet_strategy(name, cfg, ps, strategy_options(o));
#else
    SYLVA_THROW("[bench] strategy '", name, "' needs DyNet: bash ../shared/peers/build_dynet.sh, then configure with "
                "-DSYLVA_DYNET_DIR=<its build directory>");
#endif
  }
  return make_builtin_strategy(name, cfg, ps, strategy_options(o));
}

std::vector<std::string> available(Workload w) {
  std::vector<std::string> names = builtin_strategy_names(w);
#if SYLVA_HAVE_TORCH
  for (const std::string& t : torch_strategy_names(w)) names.push_back(t);
#endif
#if SYLVA_HAVE_DYNET
  for (const std::string& t : dynet_strategy_names(w)) names.push_back(t);
#endif
  return names;
}

// One strategy of an interleaved run, with its own parameters (each system
// updates its own copy) and what its timed minibatches measured.
struct Contender {
  std::string name;
  std::unique_ptr<ParameterSet> ps;
  std::unique_ptr<Strategy> s;
  size_t cursor = 0;
  std::vector<double> sample_rates, unit_rates, builds, computes, moves, updates, steps, losses;
  int64_t kernels = -1;

  // Forgets the last configuration's measurements; minibatches start at the first sample.
  void restart() {
    cursor = 0;
    for (auto* v : {&sample_rates, &unit_rates, &builds, &computes, &moves, &updates, &steps, &losses}) v->clear();
    kernels = -1;
  }
};

// Length bucketing as a TensorFlow user does it for padded batches: the
// (shuffled) samples are cut into windows of `window` minibatches, each
// window is sorted by graph size and cut into minibatches, and the order
// of all minibatches is shuffled. Minibatches then hold graphs of similar
// size, and padding wastes little. Every strategy of the run sees the
// result.
std::vector<InputGraph> bucketed(const std::vector<InputGraph>& samples, int64_t batch, int64_t window,
                                 uint64_t seed) {
  const size_t per_window = static_cast<size_t>(batch * window);
  std::vector<size_t> order(samples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t w = 0; w < order.size(); w += per_window) {
    const auto end = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), w + per_window));
    std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(w), end, [&](size_t a, size_t b) {
      return samples[a].num_vertices() < samples[b].num_vertices();
    });
  }
  std::vector<size_t> batches;
  for (size_t b = 0; b < order.size(); b += static_cast<size_t>(batch)) batches.push_back(b);
  std::mt19937_64 rng(seed);
  std::shuffle(batches.begin(), batches.end(), rng);
  std::vector<InputGraph> out;
  out.reserve(samples.size());
  for (size_t b : batches)
    for (size_t i = b; i < std::min(order.size(), b + static_cast<size_t>(batch)); ++i) out.push_back(samples[order[i]]);
  return out;
}

// The next minibatch of `batch` samples from `cursor` (wrapping around).
std::span<const InputGraph> next_batch(const std::vector<InputGraph>& samples, int64_t batch, size_t& cursor) {
  if (cursor + static_cast<size_t>(batch) > samples.size()) cursor = 0;
  std::span<const InputGraph> b(samples.data() + cursor, static_cast<size_t>(batch));
  cursor += static_cast<size_t>(batch);
  return b;
}

// One timed repeat of a strategy: minibatches, each a whole step (with
// `update`, the optimiser too) by wall clock, for at least min_time seconds
// (and one minibatch; with whole_epoch, every minibatch of the data once).
void run_repeat(Contender& c, const std::vector<InputGraph>& samples, int64_t batch, bool train, bool update,
                bool per_sample_units, const Options& o) {
  double spent = 0;
  int64_t n_samples = 0, n_units = 0, n_batches = 0;
  const int64_t min_batches = o.whole_epoch ? static_cast<int64_t>(samples.size()) / batch : 1;
  do {
    std::span<const InputGraph> b = next_batch(samples, batch, c.cursor);
    const auto t0 = std::chrono::steady_clock::now();
    StepStats st = c.s->step(b, train);
    const auto t1 = std::chrono::steady_clock::now();
    if (update) c.s->update();
    c.s->synchronize();  // on a device: the clock stops when the step's kernels have run
    const auto t2 = std::chrono::steady_clock::now();
    const double step_s = std::chrono::duration<double>(t2 - t0).count();
    spent += step_s;
    n_samples += static_cast<int64_t>(b.size());
    for (const InputGraph& g : b) n_units += per_sample_units ? 1 : g.num_vertices();
    c.builds.push_back(st.build_s);
    c.computes.push_back(st.compute_s);
    c.moves.push_back(st.movement_s);
    c.updates.push_back(std::chrono::duration<double>(t2 - t1).count());
    c.steps.push_back(step_s);
    c.losses.push_back(st.loss);
    c.kernels = st.kernels;
    ++n_batches;
  } while (spent < o.min_time || n_batches < min_batches);
  c.sample_rates.push_back(static_cast<double>(n_samples) / spent);
  c.unit_rates.push_back(static_cast<double>(n_units) / spent);
}

// Runs one (batch, mode) configuration over every contender: warm-up
// minibatches, then `repeats` rounds, each giving every contender one
// timed repeat in turn. Every contender starts at the first sample.
std::vector<Row> measure(std::vector<Contender>& cs, const std::vector<InputGraph>& samples, int64_t batch,
                         bool train, bool per_sample_units, const Options& o) {
  const bool update = train && o.optimizer != "none";
  for (Contender& c : cs) {
    c.restart();
    c.s->prepare(samples, batch, train);
    for (int i = 0; i < o.warmup; ++i) {
      c.s->step(next_batch(samples, batch, c.cursor), train);
      if (update) c.s->update();
      c.s->synchronize();
    }
  }
  for (int rep = 0; rep < o.repeats; ++rep)
    for (Contender& c : cs) run_repeat(c, samples, batch, train, update, per_sample_units, o);
  std::vector<Row> rows;
  for (const Contender& c : cs) {
    Row r;
    r.samples_per_s = median(c.sample_rates);
    r.samples_min = *std::min_element(c.sample_rates.begin(), c.sample_rates.end());
    r.samples_max = *std::max_element(c.sample_rates.begin(), c.sample_rates.end());
    r.units_per_s = median(c.unit_rates);
    r.units_min = *std::min_element(c.unit_rates.begin(), c.unit_rates.end());
    r.units_max = *std::max_element(c.unit_rates.begin(), c.unit_rates.end());
    r.build_s = median(c.builds);
    r.compute_s = median(c.computes);
    r.movement_s = median(c.moves) >= 0 ? median(c.moves) : -1.0;
    r.update_s = median(c.updates);
    r.step_s = median(c.steps);
    r.build_share = r.build_s / (r.build_s + r.compute_s);
    r.movement_share = r.movement_s >= 0 ? r.movement_s / r.compute_s : -1.0;
    r.kernels = c.kernels;
    r.loss = median(c.losses);
    r.repeats = o.repeats;
    r.strategy = c.name;
    r.values_mb = c.s->values_mb();
    r.pools_mb = c.s->pools_mb();
    rows.push_back(r);
  }
  return rows;
}

int run(const Options& o) {
  const Workload w = parse_workload(o.workload);
  if (o.list) {
    for (const std::string& name : available(w)) std::printf("%s\n", name.c_str());
    return 0;
  }
  std::vector<std::string> strategies = o.strategies.empty() ? available(w) : o.strategies;
  std::vector<int64_t> hiddens = o.hiddens;
  if (hiddens.empty()) hiddens = {w == Workload::tree_lstm ? 150 : w == Workload::tree_fc ? 256 : 200};
  std::vector<int32_t> leaves = w == Workload::tree_fc ? o.leaves : std::vector<int32_t>{0};
  std::vector<std::string> modes;
  if (o.mode == "train" || o.mode == "both") modes.push_back("train");
  if (o.mode == "infer" || o.mode == "both") modes.push_back("infer");
  SYLVA_CHECK(!modes.empty(), "[bench] --mode must be train, infer or both, not '", o.mode, "'");
  backend_for(Device::cpu()).set_threads(o.threads);
  if (Device::parse(o.device).kind == DeviceKind::cuda)
    std::printf("# device %s: values, arenas and parameter copies in GPU memory; times include the per-step "
                "parameter upload and gradient download\n", o.device.c_str());

  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    SYLVA_CHECK(csv.good(), "[bench] cannot write ", o.csv);
    csv << kCsvHeader << '\n';
  }
  nlohmann::json rows = nlohmann::json::array();
  const bool can_reset_rss = reset_peak_rss();
  const examples::TreeLstmCell cell = examples::parse_tree_lstm_cell(o.cell);
#if SYLVA_HAVE_DYNET
  for (const std::string& name : strategies)
    if (name.rfind("dynet", 0) == 0) init_dynet(o.dynet_mem, o.seed);
#endif
  std::printf("# bench_suite: %s, strategies %zu (interleaved), threads %d, cores usable %d, repeats %d x >= %.2f s, "
              "optimizer %s%s, peak RSS %s\n",
              o.workload.c_str(), strategies.size(), o.threads, usable_cpu_cores(), o.repeats, o.min_time,
              o.optimizer.c_str(), o.optimizer == "none" ? "" : (" lr " + std::to_string(o.lr)).c_str(),
              strategies.size() > 1 ? "of all strategies together (run one per process for each one's own)"
              : can_reset_rss ? "per configuration" : "per process (clear_refs not allowed)");
  if (w == Workload::tree_lstm) std::printf("# tree-lstm cell: %s\n", o.cell.c_str());
  std::printf("%-11s %-24s %-5s %6s %6s %6s %14s %16s %9s %9s %9s %8s %8s %8s\n", "workload", "strategy", "mode",
              "batch", "hidden", "leaves", "units/s", "(min-max)", "build ms", "comp ms", "upd ms", "move %", "vals MB",
              "RSS MB");

  for (int32_t lv : leaves) {
    SampleOptions so{.data_dir = o.data, .leaves = lv, .tree_fc_trees = o.tree_fc_trees, .seed = o.seed};
    Samples data = load_samples(w, so);
    std::vector<InputGraph> samples = std::move(data.graphs);
    std::mt19937_64 rng(o.seed);
    std::shuffle(samples.begin(), samples.end(), rng);
    if (o.max_samples > 0 && static_cast<int64_t>(samples.size()) > o.max_samples)
      samples.resize(static_cast<size_t>(o.max_samples));
    int64_t total_units = 0;
    for (const InputGraph& g : samples) total_units += data.unit == "sentences" ? 1 : g.num_vertices();
    std::fprintf(stderr, "[bench] %s: %s\n", o.workload.c_str(), data.description.c_str());
    for (int64_t h : hiddens) {
      ModelConfig cfg{.workload = w, .vocab = data.vocab, .hidden = h, .classes = data.classes, .layers = o.layers,
                      .dtype = o.float64 ? DType::f64 : DType::f32, .projection_in_cell = o.projection_in_cell,
                      .per_gate = o.per_gate, .cell = cell};
      cfg.embed = o.embed > 0 ? o.embed : w == Workload::tree_lstm ? 300 : h;
      // Every strategy starts from the same initial values (same seed), in its own copy.
      std::vector<Contender> cs;
      for (const std::string& name : strategies) {
        Contender c;
        c.name = name;
        c.ps = std::make_unique<ParameterSet>(cfg.dtype, o.seed);
        add_params(*c.ps, cfg);
        c.s = make(name, cfg, *c.ps, o);
        cs.push_back(std::move(c));
      }
      for (int64_t b : o.batches) {
        SYLVA_CHECK(b > 0 && b <= static_cast<int64_t>(samples.size()), "[bench] batch ", b, " needs 1..",
                    samples.size(), " samples");
        for (const std::string& mode : modes) {
          reset_peak_rss();
          Memory& device_memory = backend_for(Device::parse(o.device)).memory();
          device_memory.reset_peak();
          const bool rtt = o.threads > 1 && Device::parse(o.device).kind == DeviceKind::cpu;
          const double rtt_before = rtt ? cross_core_round_trip_ns() : -1;
          std::vector<Row> measured =
              o.bucket > 0
                  ? measure(cs, bucketed(samples, b, o.bucket, o.seed), b, mode == "train", data.unit == "sentences", o)
                  : measure(cs, samples, b, mode == "train", data.unit == "sentences", o);
          const double rtt_after = rtt ? cross_core_round_trip_ns() : -1;
          if (rtt)
            std::printf("# batch %lld: cross-core round trip %.0f ns before, %.0f ns after (-1: fewer than two CPUs)\n",
                        static_cast<long long>(b), rtt_before, rtt_after);
          const double rss = peak_rss_mb();
          const int64_t device_peak = device_memory.peak_bytes();
          for (Row& r : measured) {
            r.workload = o.workload;
            r.mode = mode;
            r.unit = data.unit;
            r.sweep = o.sweep;
            r.batch = b;
            r.hidden = h;
            r.leaves = lv;
            r.threads = o.threads;
            r.device = o.device;
            r.optimizer = mode == "train" ? o.optimizer : "none";
            r.peak_rss_mb = rss;
            r.core_rtt_before_ns = rtt_before;
            r.core_rtt_after_ns = rtt_after;
            r.peak_device_mb = device_peak < 0 ? -1 : static_cast<double>(device_peak) / (1 << 20);
            if (o.estimate_epoch) {
              r.epoch_s = static_cast<double>(total_units) / r.units_per_s;
              if (data.unit == "sentences") r.epoch_s = static_cast<double>(samples.size()) / r.samples_per_s;
              r.epoch_compute_s = r.epoch_s * r.compute_s / r.step_s;
            }
            std::printf("%-11s %-24s %-5s %6lld %6lld %6d %14.1f %7.0f-%-8.0f %9.3f %9.3f %9.3f %8s %8s %8.0f\n",
                        r.workload.c_str(), r.strategy.c_str(), mode.c_str(), static_cast<long long>(b),
                        static_cast<long long>(h), lv, r.units_per_s, r.units_min, r.units_max, 1e3 * r.build_s,
                        1e3 * r.compute_s, 1e3 * r.update_s,
                        r.movement_share >= 0 ? std::to_string(static_cast<int>(100 * r.movement_share)).c_str()
                                              : "-",
                        r.values_mb >= 0 ? std::to_string(static_cast<int>(r.values_mb + 0.5)).c_str() : "-",
                        r.peak_rss_mb);
            std::fflush(stdout);
            if (csv.is_open()) {
              csv << csv_line(r) << '\n';
              csv.flush();
            }
            rows.push_back(to_json(r));
          }
        }
      }
    }
  }
  if (!o.json.empty()) {
    std::ofstream j(o.json);
    SYLVA_CHECK(j.good(), "[bench] cannot write ", o.json);
    j << rows.dump(1) << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Sylva's benchmark suite: workloads x strategies x sizes, median throughput with spread"};
  app.add_option("--workload", o.workload, "tree-lstm | var-lstm | fixed-lstm | tree-fc")->capture_default_str();
  app.add_option("--strategies", o.strategies,
                 "comma-separated; default: every strategy available for the workload (sylva, sylva-serial, "
                 "dynamic-decl, dynamic-decl-autobatch, padded for the LSTMs, libtorch-* when built with libtorch, "
                 "dynet and dynet-autobatch when built with SYLVA_DYNET_DIR); gemm-floor on request: the GEMMs Sylva "
                 "runs for each minibatch alone, replayed through its kernel, plus its optimiser step (a bound, "
                 "not a system; CPU); sylva-bf16 on request: sylva with --precision bf16, to run beside fp32")
      ->delimiter(',');
  app.add_option("--batch", o.batches, "batch sizes (samples per minibatch), comma-separated")->delimiter(',');
  app.add_option("--hidden", o.hiddens, "hidden sizes; default 150 (tree-lstm), 200 (LSTMs), 256 (tree-fc)")
      ->delimiter(',');
  app.add_option("--leaves", o.leaves, "tree-fc: leaves per tree (powers of two)")->delimiter(',');
  app.add_option("--embed", o.embed, "word vector size; default 300 (tree-lstm), else = hidden");
  app.add_option("--layers", o.layers, "LSTM layers")->capture_default_str();
  app.add_option("--mode", o.mode, "train | infer | both")->capture_default_str();
  app.add_option("--repeats", o.repeats, "timed repeats per configuration (median and min-max reported)")
      ->capture_default_str();
  app.add_option("--min-time", o.min_time, "seconds of minibatches per repeat (at least one minibatch)")
      ->capture_default_str();
  app.add_flag("--whole-epoch", o.whole_epoch,
               "each repeat also runs every minibatch of the data once (memory runs: every strategy meets the "
               "largest minibatch)");
  app.add_option("--warmup", o.warmup, "untimed minibatches before the repeats")->capture_default_str();
  app.add_option("--threads", o.threads, "threads for kernels (GEMMs)")->capture_default_str();
  app.add_option("--device", o.device, "cpu | cuda | cuda:N: where the sylva, dynamic-decl and padded strategies run")
      ->capture_default_str();
  app.add_flag("--measure-movement", o.measure_movement,
               "time data movement (gathers, scatters, copies); costs clock reads per op");
  app.add_flag("--epoch", o.estimate_epoch, "estimate seconds per epoch over the whole dataset from the median rate");
  app.add_option("--sweep", o.sweep, "tag written with every row (batch, hidden, leaves, epoch, movement)")
      ->capture_default_str();
  app.add_option("--data", o.data, "directory holding sst/ and ptb/ (default: $SYLVA_DATA or shared/data)");
  app.add_option("--max-samples", o.max_samples, "use only the first N (shuffled) samples");
  app.add_option("--bucket", o.bucket,
                 "length bucketing: sort windows of N minibatches by graph size, then shuffle the minibatches "
                 "(what a TensorFlow user does for padded batches; every strategy sees the same ones; 0 = off)")
      ->capture_default_str();
  app.add_option("--trees", o.tree_fc_trees, "tree-fc: trees generated per leaves value")->capture_default_str();
  app.add_option("--seed", o.seed, "parameter initialisation and shuffling")->capture_default_str();
  app.add_flag("--float64", o.float64, "run in double precision");
  app.add_flag("--list", o.list, "print the strategies available for --workload and exit");
  app.add_flag("--projection-in-cell", o.projection_in_cell,
               "LSTMs, sylva only: write x·W + b inside the vertex function instead of the program");
  app.add_flag("--per-gate", o.per_gate,
               "Tree-LSTM and LSTMs, sylva only: write the cell gate by gate (one matmul per gate; IOS merges them)");
  app.add_option("--cell", o.cell, "tree-lstm: tai (Tai et al., five gates) | dynet (the DyNet benchmarks' cell)")
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer,
                 "none | sgd | adagrad | adam: the update timed with each training step (each system's own)")
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate of --optimizer")->capture_default_str();
  app.add_option("--dynet-mem", o.dynet_mem,
                 "dynet strategies: MB of DyNet memory pools (its --dynet-mem; too small aborts under autobatching)")
      ->capture_default_str();
  app.add_option("--csv", o.csv, "write rows as CSV");
  app.add_option("--json", o.json, "write rows as JSON");
  const sylva::examples::OptimisationFlags ablation(app, "sylva: ");
  CLI11_PARSE(app, argc, argv);
  try {
    o.optimisations = ablation.chosen();
    o.precision = ablation.precision();
    return run(o);
  } catch (const sylva::Error& e) {
    std::fprintf(stderr, "bench_suite: %s\n", e.what());
    return 1;
  }
}
