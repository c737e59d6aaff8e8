// bench_roofline: how close Tree-LSTM training on SST gets to the machine's
// GEMM rate. Per hidden size it counts the GEMMs one epoch executes (an
// observer reconstructs M, K, N of every MatMul and of every parameter
// gradient folded into a ParamGradOut: gemm_replay.h), times full epochs
// without the observer, and replays the same GEMMs through the CPU
// backend's own MatMul kernel (oneDNN's sgemm for float32) on buffers
// allocated once. fraction = achieved rate / the kernel's rate at the same
// shapes.
//
//   bench_roofline --hidden 150,512 --batch 256 --repeats 3 --json roofline.json
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <utility>

#include "example_util.h"
#include "optimisation_flags.h"
#include "gemm_replay.h"
#include "sentiment_training.h"
#include "tree_lstm_model.h"
#include "treebank.h"

namespace {

using namespace sylva;
using namespace sylva::examples;
using sylva::bench::GemmReplay;
using sylva::bench::RecordedGemm;
using sylva::bench::recorded_gemm;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int64_t> hiddens{150, 512};
  int64_t embed = 300, batch = 256, max_samples = 0;
  int threads = 1, repeats = 3;
  uint64_t seed = 1;
  std::string data, json;
  ExecutorOptions executor;  // ablations applied; seed and threads set per run
};

// Where a GEMM ran. "batched": F or ∂F work done once over many tasks' rows
// outside the task loop (lazy parameter gradients, eager batching).
enum class GemmSite : uint8_t { program, program_grad, f, f_batched, df, df_batched };

const char* site_name(GemmSite s) {
  switch (s) {
    case GemmSite::program: return "program";
    case GemmSite::program_grad: return "dprogram";
    case GemmSite::f: return "F";
    case GemmSite::f_batched: return "F batched";
    case GemmSite::df: return "dF";
    case GemmSite::df_batched: return "dF batched";
  }
  return "?";
}

// One GEMM as the kernel ran it (gemm_replay.h) and where: C (=|+=)
// op(A)·op(B), C [m, n], inner k.
struct Gemm {
  RecordedGemm shape;
  GemmSite site = GemmSite::program;
  auto operator<=>(const Gemm&) const = default;
  int64_t m() const { return shape.out_rows; }
  int64_t n() const { return shape.out_cols; }
  int64_t k() const { return shape.trans_a ? shape.a_rows : shape.a_cols; }
  int64_t flops() const { return shape.flops(); }
  std::string op() const {
    return std::string(shape.accumulate ? "C += " : "C = ") + (shape.trans_a ? "Aᵀ" : "A") + "·" +
           (shape.trans_b ? "Bᵀ" : "B");
  }
};

struct GemmStats {
  int64_t calls = 0;
  double observed_s = 0;  // inside the observed training epoch
};

// Records every GEMM of the observed steps from the executor's OpEvents:
// MatMul nodes, and parameter gradients folded into a ParamGradOut
// (grad += A·B), their shapes reconstructed by recorded_gemm.
class GemmCounter {
 public:
  void record(const OpEvent& e) {
    const std::optional<RecordedGemm> g = recorded_gemm(e);
    if (!g) return;
    GemmStats& s = shapes[{*g, site(e)}];
    ++s.calls;
    s.observed_s += std::chrono::duration<double>(e.elapsed).count();
  }

  std::map<Gemm, GemmStats> shapes;

 private:
  GemmSite site(const OpEvent& e) const {
    const bool batched = e.phase == EventPhase::before_loop || e.phase == EventPhase::after_loop;
    switch (e.graph.kind()) {
      case ir::GraphKind::program: return GemmSite::program;
      case ir::GraphKind::program_gradient: return GemmSite::program_grad;
      case ir::GraphKind::vertex_function: return batched ? GemmSite::f_batched : GemmSite::f;
      case ir::GraphKind::vertex_gradient: return batched ? GemmSite::df_batched : GemmSite::df;
    }
    return GemmSite::program;
  }
};

// Runs every recorded GEMM as often as training did, through the CPU
// backend's MatMul kernel on operands allocated once; seconds per shape.
std::map<Gemm, double> replay(const std::map<Gemm, GemmStats>& shapes, GemmReplay& kernel) {
  std::map<Gemm, double> seconds;
  for (const auto& [g, s] : shapes) {
    const std::vector<RecordedGemm> one{g.shape};
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < s.calls; ++i) kernel.run(one);
    seconds[g] = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return seconds;
}

std::string spread(const Series& s, const char* fmt) {
  char buf[128];
  std::string f = std::string(fmt) + " (" + fmt + "–" + fmt + ")";
  std::snprintf(buf, sizeof buf, f.c_str(), s.median(), s.min(), s.max());
  return buf;
}

double gflops(double flops, double seconds) { return seconds > 0 ? flops / seconds * 1e-9 : 0.0; }

// GEMM work of a group (a shape, a site and op, the epoch) and its time in
// the observed epoch and in the replay (median over repeats).
struct Work {
  int64_t flops = 0, calls = 0;
  double observed_s = 0, replay_s = 0;
  Work& operator+=(const Work& w) {
    flops += w.flops;
    calls += w.calls;
    observed_s += w.observed_s;
    replay_s += w.replay_s;
    return *this;
  }
  // "calls | GFLOP | share | in training GFLOP/s | replay GFLOP/s |"
  std::string row(const Work& total) const {
    char buf[160];
    const double f = static_cast<double>(flops);
    std::snprintf(buf, sizeof buf, "%ld | %.3f | %.1f%% | %.2f | %.2f |", static_cast<long>(calls), f * 1e-9,
                  100 * f / static_cast<double>(total.flops), gflops(f, observed_s), gflops(f, replay_s));
    return buf;
  }
};

// GEMM work the model needs, per vertex (3 GEMMs per product: forward,
// input gradient, weight gradient): x·W at vertices with a word, [h_l; h_r]·U
// at vertices with children, h·Ws at every vertex. Skipping zero work should
// make the executed count equal to this.
int64_t needed_flops(const std::vector<GraphBatch>& batches, const TreeLstmConfig& c) {
  int64_t words = 0, internal = 0, vertices = 0;
  for (const GraphBatch& b : batches) {
    const std::vector<int32_t>& ids = b.ids("words");
    for (int32_t v = 0; v < b.num_vertices(); ++v) {
      words += ids[static_cast<size_t>(v)] >= 0;
      const auto ch = b.children(v);
      internal += std::any_of(ch.begin(), ch.end(), [](int32_t x) { return x >= 0; });
    }
    vertices += b.num_vertices();
  }
  const int64_t g = 5 * c.hidden;
  return 3 * 2 * (words * c.dim * g + internal * 2 * c.hidden * g + vertices * c.hidden * c.classes);
}

// The observed epoch: every GEMM's shape (into `counter`) and the profile.
Profiler observe_epoch(Trainer& trainer, const std::vector<GraphBatch>& batches, GemmCounter& counter) {
  Profiler prof;
  trainer.executor().set_observer([&](const OpEvent& e) {
    prof.record(e);
    counter.record(e);
  });
  Timer observed;
  for (const GraphBatch& b : batches) {
    trainer.step(b);
  }
  prof.add_wall_time(observed.seconds());
  trainer.executor().set_observer({});
  return prof;
}

// Timed epochs (no observer) interleaved with replays of the counted GEMMs,
// so drift of the machine hits both alike.
struct Timings {
  Series epoch_s, replay_s, ratio;
  std::map<Gemm, Series> shape_s;
};

Timings time_epochs(Trainer& trainer, const std::vector<GraphBatch>& batches, const GemmCounter& counter,
                    int64_t hidden, int repeats) {
  std::vector<RecordedGemm> gemms;
  for (const auto& kv : counter.shapes) gemms.push_back(kv.first.shape);
  SYLVA_CHECK(!gemms.empty(), "[bench_roofline] no GEMM observed in an epoch");
  GemmReplay kernel(backend_for(Device::cpu()));
  kernel.prepare(gemms, DType::f32, trainer.executor().options().precision);  // bf16: the bf16 kernel alone
  Timings t;
  for (int r = 0; r < repeats; ++r) {
    Timer epoch;
    for (const GraphBatch& b : batches) trainer.step(b);
    t.epoch_s.values.push_back(epoch.seconds());
    double replayed = 0;
    for (const auto& [g, sec] : replay(counter.shapes, kernel)) {
      t.shape_s[g].values.push_back(sec);
      replayed += sec;
    }
    t.replay_s.values.push_back(replayed);
    t.ratio.values.push_back(replayed / t.epoch_s.values.back());
    std::fprintf(stderr, "[roofline] h=%ld: repeat %d/%d: epoch %.3f s, kernel replay %.3f s\n",
                 static_cast<long>(hidden), r + 1, repeats, t.epoch_s.values.back(), replayed);
  }
  return t;
}

// The GEMM work by site and op, and the five largest shapes.
void print_breakdown(const std::map<std::pair<GemmSite, std::string>, Work>& by_site,
                     std::vector<std::pair<Gemm, Work>> by_shape, const Work& total) {
  std::printf("\nGEMMs by site and op:\n\n| site | op | calls | GFLOP | share | in training GFLOP/s | kernel replay "
              "GFLOP/s |\n|---|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [key, w] : by_site)
    std::printf("| %s | %s | %s\n", site_name(key.first), key.second.c_str(), w.row(total).c_str());
  std::sort(by_shape.begin(), by_shape.end(), [](const auto& x, const auto& y) { return x.second.flops > y.second.flops; });
  std::printf("\ntop GEMM shapes by FLOPs:\n\n| M | K | N | op | site | calls | GFLOP | share | in training GFLOP/s "
              "| kernel replay GFLOP/s |\n|---:|---:|---:|---|---|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < by_shape.size() && i < 5; ++i) {
    const auto& [g, w] = by_shape[i];
    std::printf("| %ld | %ld | %ld | %s | %s | %s\n", static_cast<long>(g.m()), static_cast<long>(g.k()),
                static_cast<long>(g.n()), g.op().c_str(), site_name(g.site), w.row(total).c_str());
  }
}

nlohmann::json profile_json(const Profiler& prof) {
  nlohmann::json profile = nlohmann::json::object();
  for (size_t c = 0; c < static_cast<size_t>(OpCategory::count_); ++c) {
    const Profiler::Stat& st = prof.category(static_cast<OpCategory>(c));
    if (st.calls > 0) profile[category_name(static_cast<OpCategory>(c))] = {{"s", st.seconds}, {"calls", st.calls}};
  }
  profile["task loop"] = {{"s", prof.task_loop_seconds()}};
  profile["outside ops"] = {{"s", prof.outside_seconds()}};
  profile["wall"] = {{"s", prof.wall_seconds()}};
  return profile;
}

nlohmann::json run_hidden(const Treebank& tb, const std::vector<GraphBatch>& batches, int64_t hidden,
                          const Options& o) {
  SentimentTrainOptions so;  // the example's defaults: optimiser, lr, l2, clip, dropout
  so.model.vocab = tb.vocab.size();
  so.model.dim = o.embed;
  so.model.hidden = hidden;
  const TreeLstmConfig& cfg = so.model;
  ExecutorOptions eo = o.executor;
  eo.policy = so.policy;
  eo.seed = o.seed;
  eo.threads = o.threads;
  ParameterSet ps(cfg.dtype, o.seed);
  add_tree_lstm_params(ps, cfg);
  ps["E"].lr_scale = so.emb_lr_scale;
  TreeLstmModel model(ps, cfg);
  Trainer trainer(model.program, ps, model.loss, make_optimizer(so.optimizer, so.lr, "bench_roofline"),
                  {.executor = eo, .clip_norm = so.clip, .weight_decay = so.l2});
  std::printf("\n## hidden %ld (d=%ld, params %ld)\n", static_cast<long>(hidden), static_cast<long>(cfg.dim),
              static_cast<long>(ps.numel()));

  trainer.step(batches.front());  // warm-up on the first minibatch
  std::printf("warm-up: 1 minibatch\n");

  std::fprintf(stderr, "[roofline] h=%ld: observed epoch (%zu minibatches)\n", static_cast<long>(hidden),
               batches.size());
  GemmCounter counter;
  const Profiler prof = observe_epoch(trainer, batches, counter);
  const double observed_wall_s = prof.wall_seconds();
  const Timings timings = time_epochs(trainer, batches, counter, hidden, o.repeats);
  const Series &epoch_s = timings.epoch_s, &replay_s = timings.replay_s, &ratio = timings.ratio;
  const std::map<Gemm, Series>& shape_s = timings.shape_s;

  Work total;
  std::map<std::pair<GemmSite, std::string>, Work> by_site;
  std::vector<std::pair<Gemm, Work>> by_shape;
  nlohmann::json shapes_json = nlohmann::json::array();
  for (const auto& [g, s] : counter.shapes) {
    Work w{g.flops() * s.calls, s.calls, s.observed_s, shape_s.at(g).median()};
    total += w;
    by_site[{g.site, g.op()}] += w;
    by_shape.emplace_back(g, w);
    shapes_json.push_back({{"m", g.m()}, {"k", g.k()}, {"n", g.n()}, {"trans_a", g.shape.trans_a},
                           {"trans_b", g.shape.trans_b}, {"accumulate", g.shape.accumulate}, {"site", site_name(g.site)}, {"calls", s.calls},
                           {"flops", w.flops}, {"observed_s", s.observed_s}, {"replay_s", shape_s.at(g).values}});
  }
  const int64_t needed = needed_flops(batches, cfg);
  const double flops = static_cast<double>(total.flops);
  std::printf("GEMMs per epoch: %ld calls, %zu distinct (M, K, N, op, site), %.3f GFLOP executed; the model needs "
              "%.3f GFLOP (executed / needed %.4f)\n",
              static_cast<long>(total.calls), counter.shapes.size(), flops * 1e-9, static_cast<double>(needed) * 1e-9,
              flops / static_cast<double>(needed));
  std::printf("profile of the observed epoch (observer on, %.2f s):\n%s", observed_wall_s, prof.report().c_str());
  std::printf("GEMM time inside the observed epoch: %.3f s (%.1f GFLOP/s)\n", total.observed_s,
              gflops(flops, total.observed_s));

  const double achieved = gflops(flops, epoch_s.median()), kernel = gflops(flops, replay_s.median());
  std::printf("\n| h | GEMM work / epoch | epoch s, median (min–max) | achieved GFLOP/s | kernel replay s, median "
              "(min–max) | kernel GFLOP/s, same shapes | fraction (per repeat) |\n"
              "|---:|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| %ld | %.3f GFLOP | %s | %.2f | %s | %.2f | %.3f (%.3f–%.3f) |\n", static_cast<long>(hidden),
              flops * 1e-9, spread(epoch_s, "%.3f").c_str(), achieved, spread(replay_s, "%.3f").c_str(), kernel,
              achieved / kernel, ratio.min(), ratio.max());

  print_breakdown(by_site, by_shape, total);
  return {{"hidden", hidden}, {"embed", cfg.dim}, {"params", ps.numel()},
          {"gemm_flops", total.flops}, {"needed_flops", needed}, {"gemm_calls", total.calls},
          {"distinct_gemms", counter.shapes.size()}, {"epoch_s", epoch_s.values},
          {"epoch_s_median", epoch_s.median()}, {"achieved_gflops", achieved}, {"replay_s", replay_s.values},
          {"replay_s_median", replay_s.median()}, {"kernel_gflops", kernel}, {"fraction", achieved / kernel},
          {"fraction_per_repeat", ratio.values}, {"observed_epoch_s", observed_wall_s},
          {"observed_gemm_s", total.observed_s}, {"profile", profile_json(prof)}, {"gemms", shapes_json}};
}

// The rate of one large GEMM, for scale: what the kernel reaches on this machine.
nlohmann::json reference_gemm(int repeats, Precision precision) {
  const Gemm g{.shape = {.a_rows = 2048, .a_cols = 1024, .b_rows = 1024, .b_cols = 2560, .out_rows = 2048,
                         .out_cols = 2560}};
  const std::vector<RecordedGemm> one{g.shape};
  GemmReplay kernel(backend_for(Device::cpu()));
  kernel.prepare(one, DType::f32, precision);
  kernel.run(one);  // warm-up
  Series s;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = Clock::now();
    kernel.run(one);
    s.values.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const double rate = gflops(static_cast<double>(g.flops()), s.median());
  std::printf("# reference GEMM %ldx%ldx%ld (M x K x N, C = A·B, row-major, %s operands, CPU MatMul kernel): %s s "
              "-> %.2f GFLOP/s\n",
              static_cast<long>(g.m()), static_cast<long>(g.k()), static_cast<long>(g.n()),
              precision == Precision::bf16 ? "bfloat16" : "float32", spread(s, "%.4f").c_str(), rate);
  return {{"m", g.m()}, {"k", g.k()}, {"n", g.n()}, {"seconds", s.values}, {"gflops", rate}};
}

int run(const Options& o) {
  SYLVA_CHECK(o.batch > 0 && o.repeats > 0 && o.threads > 0 && o.embed > 0 && o.max_samples >= 0,
              "[bench_roofline] --batch, --repeats, --threads and --embed must be positive, --max-samples >= 0");
  for (int64_t h : o.hiddens) SYLVA_CHECK(h > 0, "[bench_roofline] --hidden ", h, " must be positive");
  std::vector<std::string> looked;
  const std::string dir = find_sst(o.data.empty() ? "" : o.data + "/sst", looked);
  if (dir.empty()) {
    std::string where;
    for (const std::string& l : looked) where += "\n  " + l;
    SYLVA_THROW("[bench_roofline] SST (train.txt, dev.txt, test.txt) not found; looked in:", where,
                "\nset --data DIR (holding sst/) or SYLVA_DATA");
  }
  std::fprintf(stderr, "[roofline] loading SST from %s\n", dir.c_str());
  Treebank tb = load_sst(dir);
  const size_t total = tb.train.size();
  std::mt19937_64 rng(o.seed);
  std::shuffle(tb.train.begin(), tb.train.end(), rng);
  if (o.max_samples > 0 && static_cast<size_t>(o.max_samples) < tb.train.size())
    tb.train.resize(static_cast<size_t>(o.max_samples));
  std::vector<GraphBatch> batches;
  int64_t vertices = 0;
  for (size_t i = 0; i < tb.train.size(); i += static_cast<size_t>(o.batch)) {
    std::vector<const InputGraph*> ptrs;
    for (size_t j = i; j < std::min(tb.train.size(), i + static_cast<size_t>(o.batch)); ++j)
      ptrs.push_back(&tb.train[j]);
    batches.emplace_back(std::move(ptrs));
    vertices += batches.back().num_vertices();
  }
  SYLVA_CHECK(!batches.empty(), "[bench_roofline] the training split is empty");

  backend_for(Device::cpu()).set_threads(o.threads);
  const SentimentTrainOptions so;
  std::string exec;
  for (const OptimisationInfo& i : optimisation_table())
    exec += std::string(" ") + std::string(i.name) + "=" + (o.executor.on(i.id) ? "on" : "off");
  std::printf("# bench_roofline: Tree-LSTM on SST train (%s), %zu of %zu trees (shuffled, seed %lu), %zu "
              "minibatches of <= %ld trees, %ld vertices per epoch; d=%ld, %d thread(s), %d repeats\n",
              tb.source.c_str(), tb.train.size(), total, static_cast<unsigned long>(o.seed), batches.size(),
              static_cast<long>(o.batch), static_cast<long>(vertices), static_cast<long>(o.embed), o.threads,
              o.repeats);
  std::printf("# training as examples/02_tree_lstm: %s lr %g, l2 %g, clip %g, dropout %g on the "
              "classifier input, word dropout %g, float32 with %s GEMMs, %s; epoch = every minibatch in the same order, with "
              "optimiser steps\n# executor options:%s\n",
              so.optimizer.c_str(), so.lr, so.l2, so.clip, so.model.dropout, so.model.emb_dropout,
              precision_name(o.executor.precision).data(), policy_name(so.policy), exec.c_str());
  nlohmann::json out = {{"tool", "bench_roofline"}, {"data", tb.source}, {"trees", tb.train.size()},
                        {"minibatches", batches.size()}, {"vertices", vertices}, {"batch", o.batch},
                        {"threads", o.threads}, {"repeats", o.repeats}, {"seed", o.seed},
                        {"dropout", so.model.dropout}, {"optimizer", so.optimizer}, {"lr", so.lr}, {"l2", so.l2}};
  for (const OptimisationInfo& i : optimisation_table()) out["executor_options"][std::string(i.name)] = o.executor.on(i.id);
  out["precision"] = std::string(precision_name(o.executor.precision));
  out["reference_gemm"] = reference_gemm(o.repeats, o.executor.precision);
  out["runs"] = nlohmann::json::array();
  for (int64_t h : o.hiddens) out["runs"].push_back(run_hidden(tb, batches, h, o));

  std::printf("\n## summary\n\n| h | GFLOP / epoch | epoch s, median (min–max) | achieved GFLOP/s | kernel GFLOP/s, "
              "same shapes | fraction |\n|---:|---:|---:|---:|---:|---:|\n");
  for (const nlohmann::json& r : out["runs"]) {
    Series e{r["epoch_s"].get<std::vector<double>>()};
    std::printf("| %ld | %.3f | %s | %.2f | %.2f | %.3f |\n", r["hidden"].get<long>(),
                r["gemm_flops"].get<double>() * 1e-9, spread(e, "%.3f").c_str(), r["achieved_gflops"].get<double>(),
                r["kernel_gflops"].get<double>(), r["fraction"].get<double>());
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    SYLVA_CHECK(f.good(), "[bench_roofline] cannot write ", o.json);
    f << out.dump(2) << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"How close Tree-LSTM training on SST gets to its GEMM kernel's rate at the same shapes"};
  app.add_option("--hidden", o.hiddens, "Tree-LSTM memory sizes h")->capture_default_str()->delimiter(',');
  app.add_option("--embed", o.embed, "Word vector size d")->capture_default_str();
  app.add_option("--batch", o.batch, "Trees per minibatch")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads for GEMMs (training and replay)")->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timed epochs and replays (median reported)")->capture_default_str();
  app.add_option("--max-samples", o.max_samples, "Train trees per epoch (0 = the whole SST train split)")
      ->capture_default_str();
  app.add_option("--data", o.data, "Directory holding sst/ (default: $SYLVA_DATA, else shared/data found upwards)");
  app.add_option("--seed", o.seed, "Seed of parameters, shuffling and dropout")->capture_default_str();
  app.add_option("--json", o.json, "Also write the results here");
  const OptimisationFlags ablation(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help is 0; every bad option exits with 1
  }
  o.executor.optimisations = ablation.chosen();
  o.executor.precision = ablation.precision();
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
