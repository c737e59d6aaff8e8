// IOS search on the IOS paper's CNN graphs: per network, variant and
// pruning (r, s), the DP states, the stages costed and the search time.
// --cost analytical: a model of a two-core CPU (multiply-add rate,
// per-operator and per-stage overheads) that measures nothing, so its costs
// compare schedules under the model only. --cost profile: every stage is
// run on this CPU through oneDNN (concurrent groups on a thread pool,
// merged convolutions as one) or, with --device cuda, on the GPU through
// cuDNN (concurrent groups on their own CUDA streams), then each variant's
// plans end to end. --kernels cosa | auto runs the CPU's convolutions on
// CoSA-scheduled kernels (sylva/graph/cnn_cosa.h).
#include <CLI/CLI.hpp>

#include <bit>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <map>

#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/graph/cnn.h"
#include "sylva/graph/cnn_cosa.h"
#include "sylva/sched/ios_graph.h"

using namespace sylva;
using namespace sylva::ios;

namespace {

// Time of an operator: multiply-adds at `macs_per_s`, output bytes at
// `bytes_per_s`, plus a launch overhead. A concurrent stage spreads its
// groups over `cores` threads (never faster than its longest group or its
// total work over the cores) and pays a synchronisation; a merged stage
// runs as one operator.
class AnalyticalCost final : public StageCostModel {
 public:
  AnalyticalCost(const std::vector<const CnnNode*>& ops, const BlockPart& part, int batch, int cores)
      : ops_(ops), part_(part), batch_(batch), cores_(cores) {}

  double op_time(int v) const {
    const CnnNode& n = *ops_[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])];
    const double out_bytes = 4.0 * static_cast<double>(n.output_shape[0] * n.output_shape[1] * n.output_shape[2]);
    return batch_ * (n.macs() / kMacsPerS + out_bytes / kBytesPerS) + kOpOverhead;
  }
  double latency(const OpDag&, const Stage& st) override {
    if (st.kind == Stage::Kind::merged) {
      double t = 0;
      for (int v = 0; v < part_.dag.size(); ++v)
        if (st.groups[0] >> v & 1) t += op_time(v) - kOpOverhead;
      return t + kOpOverhead + kStageOverhead;
    }
    double longest = 0, total = 0;
    for (OpSet g : st.groups) {
      double t = 0;
      for (int v = 0; v < part_.dag.size(); ++v)
        if (g >> v & 1) t += op_time(v);
      longest = std::max(longest, t);
      total += t;
    }
    return std::max(longest, total / cores_) + (st.groups.size() > 1 ? kStageOverhead : 0.0);
  }
  // IOS's merge rule for convolutions (ios::merge_convs).
  bool mergeable(const OpDag&, OpSet s) override {
    std::vector<const CnnNode*> convs;
    for (int v = 0; v < part_.dag.size(); ++v)
      if (s >> v & 1) convs.push_back(ops_[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])]);
    return merge_convs(convs).has_value();
  }

 private:
  static constexpr double kMacsPerS = 40e9, kBytesPerS = 10e9, kOpOverhead = 20e-6, kStageOverhead = 10e-6;
  const std::vector<const CnnNode*>& ops_;
  const BlockPart& part_;
  int batch_, cores_;
};

struct Config {
  Variant variant;
  int r, s;
};

std::string find_graph(const std::string& name, const std::string& data) {
  if (std::filesystem::exists(name)) return name;
  std::vector<std::string> dirs;
  if (!data.empty()) dirs.push_back(data + "/ios/graphs");
  if (const char* env = std::getenv("SYLVA_DATA")) dirs.push_back(std::string(env) + "/ios/graphs");
  for (const char* d : {"../shared/data/ios/graphs", "../../shared/data/ios/graphs", "/work/shared/data/ios/graphs"})
    dirs.push_back(d);
  std::string looked;
  for (const std::string& d : dirs) {
    const std::string p = d + "/" + name + ".seq.json";
    if (std::filesystem::exists(p)) return p;
    looked += "\n  " + p;
  }
  SYLVA_THROW("[bench_ios] graph '", name, "' not found; looked for a file of that name and in:", looked,
              "\n(set SYLVA_DATA or pass --data)");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What profiling runs with besides the graph.
struct ProfileSetup {
  int part_size, batch, cores, repeats, profile_repeats, candidates, choice_rounds;
  bool explain, warm_stages;
  cnn::Impl impl;
  std::string device, kernels, stage_cache, csv;
};

// One row of the profile table: a variant's plans (one per block part).
struct Searched {
  std::string name;
  Config config;
  std::vector<StagePlan> plans;  // per part
  int64_t profiled = 0, states = 0;
  double predicted = 0;  // the plans' cost: the sum of their stages' profiled latencies
  double search_s = 0;
  std::vector<double> ms;
};

// Where the parts' chosen plans came from, for the summary line.
std::string choice_summary(const std::map<std::string, int>& picked, int parts) {
  std::string s = std::to_string(parts) + " parts:";
  for (const auto& [from, n] : picked) s += " " + from + " " + std::to_string(n);
  return s;
}

// What kind of stage: merged, concurrent (two or more groups), or the op
// type of its one operator, or "chain".
std::string stage_class(const CnnBlock& block, const BlockPart& part, const Stage& st) {
  if (st.kind == Stage::Kind::merged) return "merged";
  if (st.groups.size() > 1) return "concurrent";
  if (std::popcount(st.groups[0]) > 1) return "chain";
  const int v = std::countr_zero(st.groups[0]);
  return block.ops()[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]->type;
}

// --explain: a row's stages timed inside runs of its whole plans (each
// part's plan, stage by stage, median of `rounds`) beside the costs the
// search measured for them alone, summed per kind of stage.
void explain_row(cnn::CnnRunner& runner, const std::vector<const CnnBlock*>& blocks, const std::vector<BlockPart>& parts,
                 const Searched& f, const cnn::StageCosts& costs, int cores, int rounds, const std::string& graph) {
  struct Sum {
    int stages = 0;
    double alone = 0, in_plan = 0;
  };
  std::map<std::string, Sum> by_class;
  Sum all;
  // t[p][k]: stage k of part p, one time per round of the whole network.
  std::vector<std::vector<std::vector<double>>> t(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) t[p].resize(f.plans[p].stages.size());
  std::vector<double> one;
  for (int r = 0; r <= rounds; ++r)
    for (size_t p = 0; p < parts.size(); ++p) {
      cnn::time_plan(runner, *blocks[p], parts[p], f.plans[p], cores, &one);
      if (r > 0)
        for (size_t k = 0; k < one.size(); ++k) t[p][k].push_back(one[k]);
    }
  for (size_t p = 0; p < parts.size(); ++p) {
    const StagePlan& plan = f.plans[p];
    for (size_t k = 0; k < plan.stages.size(); ++k) {
      const cnn::StageCosts::Cost* c = costs.find(cnn::stage_key(*blocks[p], parts[p], plan.stages[k]));
      if (!c) continue;  // not costed by the search (cannot happen for searched plans)
      Sum& s = by_class[stage_class(*blocks[p], parts[p], plan.stages[k])];
      const double in_plan = median(t[p][k]);
      for (Sum* x : {&s, &all}) {
        ++x->stages;
        x->alone += c->median;
        x->in_plan += in_plan;
      }
    }
  }
  for (const auto& [cls, x] : by_class)
    std::printf("# explain %s %s: %-10s %4d stages, alone %9.3f ms, in the plan %9.3f ms (%+.1f%%)\n", graph.c_str(),
                f.name.c_str(), cls.c_str(), x.stages, x.alone * 1e3, x.in_plan * 1e3,
                (x.in_plan / x.alone - 1) * 100);
  std::printf("# explain %s %s: all        %4d stages, alone %9.3f ms, in the plan %9.3f ms (%+.1f%%); whole runs "
              "%.3f ms\n",
              graph.c_str(), f.name.c_str(), all.stages, all.alone * 1e3, all.in_plan * 1e3,
              (all.in_plan / all.alone - 1) * 100, median(f.ms));
}

// Seconds of one run of the whole network with `plans` (one per part).
double time_network(cnn::CnnRunner& runner, const std::vector<const CnnBlock*>& blocks,
                    const std::vector<BlockPart>& parts, const std::vector<StagePlan>& plans, int cores) {
  runner.synchronize();
  const auto s0 = std::chrono::steady_clock::now();
  for (size_t p = 0; p < parts.size(); ++p) cnn::run_plan(runner, *blocks[p], parts[p], plans[p], cores);
  runner.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
}

// IOS-Both's final choice, measured. Per part, the DP's best plans and
// the other variants' plans of that part (Sequential, Greedy, and Merge
// and Parallel at the same r,s) run in turns and the fastest is kept: the
// "mixed" plan. Then the whole network runs in turns with the mixed plan,
// the DP's best alone and each other variant's plans; the fastest is
// IOS-Both, so in that contest it is at least as fast as each of them.
Searched choose_both(const std::string& graph, cnn::CnnRunner& runner, const std::vector<const CnnBlock*>& blocks,
                     const std::vector<BlockPart>& parts, const Searched& dp,
                     const std::vector<std::vector<StagePlan>>& runners_up, const std::vector<Searched>& found,
                     const ProfileSetup& o, std::string& summary) {
  std::vector<const Searched*> others{&dp};
  for (const Searched& f : found)
    if (f.config.variant == Variant::sequential || f.config.variant == Variant::greedy ||
        (f.config.r == dp.config.r && f.config.s == dp.config.s && f.name != "ios-both"))
      others.push_back(&f);
  Searched mixed = dp;
  mixed.name = "mixed";
  mixed.predicted = 0;
  std::map<std::string, int> picked;
  double choosing = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    std::vector<StagePlan> cands = runners_up[p];
    std::vector<std::string> from;
    for (size_t i = 0; i < cands.size(); ++i) from.push_back("dp-" + std::to_string(i + 1));
    for (size_t i = 1; i < others.size(); ++i) {
      cands.push_back(others[i]->plans[p]);
      from.push_back(others[i]->name);
    }
    const cnn::PlanChoice pick = cnn::choose_plan(runner, *blocks[p], parts[p], cands, o.cores, o.choice_rounds);
    ++picked[from[pick.contest.best]];
    choosing += pick.contest.spent_s;
    mixed.predicted += cands[pick.contest.best].cost;
    mixed.plans[p] = cands[pick.contest.best];
  }
  others.insert(others.begin(), &mixed);
  const ios::Contest whole = ios::fastest(others.size(), o.choice_rounds, [&](size_t k) {
    return time_network(runner, blocks, parts, others[k]->plans, o.cores);
  });
  choosing += whole.spent_s;
  Searched chosen = *others[whole.best];
  chosen.name = "ios-both";
  chosen.config = dp.config;
  chosen.profiled = dp.profiled;
  chosen.states = dp.states;
  chosen.search_s = dp.search_s + choosing;
  chosen.ms.clear();
  std::string line = "# " + graph + " ios-both " + std::to_string(dp.config.r) + "," +
                     std::to_string(dp.config.s) + ", the choice: per part (" +
                     choice_summary(picked, static_cast<int>(parts.size())) + "), then whole runs:";
  for (size_t k = 0; k < others.size(); ++k)
    line += " " + others[k]->name + " " + std::to_string(whole.median(k) * 1e3).substr(0, 6) + " ms" +
            (k == whole.best ? " (kept)" : "") + (k + 1 < others.size() ? "," : "");
  summary += line + "; " + std::to_string(choosing).substr(0, 5) + " s choosing\n";
  return chosen;
}

// The sum of the minimum (not the median) cost of every stage of `plans`.
double predicted_min(const std::vector<StagePlan>& plans, const cnn::StageCosts& costs,
                     const std::vector<const CnnBlock*>& blocks, const std::vector<BlockPart>& parts) {
  double sum = 0;
  for (size_t p = 0; p < parts.size(); ++p)
    for (const Stage& st : plans[p].stages) {
      const cnn::StageCosts::Cost* c = costs.find(cnn::stage_key(*blocks[p], parts[p], st));
      SYLVA_CHECK(c, "[bench_ios] a stage of a searched plan was never costed");
      sum += c->min;
    }
  return sum;
}

// The table's rows (and the CSV's, appended to `csv` when given). vs seq:
// the median over the rounds of Sequential's time over the variant's in
// the same round (paired, so a slow spell of the machine that spans a
// round cancels out). pred err: the predicted latency (the sum of the
// stages' median costs) over the median latency, less 1; min err: the sum
// of the stages' fastest runs over the fastest run of the whole network.
void report_rows(const std::string& graph, const std::vector<Searched>& found, const cnn::StageCosts& costs,
                 const std::vector<const CnnBlock*>& blocks, const std::vector<BlockPart>& parts,
                 const std::string& csv_file) {
  const std::vector<double>& seq_rounds = found.front().ms;  // configs start with Sequential
  std::string csv;
  for (const Searched& f : found) {
    int64_t merged = 0, concurrent = 0;
    for (const StagePlan& p : f.plans)
      for (const Stage& st : p.stages) {
        merged += st.kind == Stage::Kind::merged;
        concurrent += st.kind == Stage::Kind::concurrent && st.groups.size() > 1;
      }
    const double ms = median(f.ms), lo = *std::min_element(f.ms.begin(), f.ms.end()),
                 hi = *std::max_element(f.ms.begin(), f.ms.end());
    std::vector<double> paired;
    for (size_t r = 0; r < f.ms.size(); ++r) paired.push_back(seq_rounds[r] / f.ms[r]);
    const double vs_seq = median(paired), err = (f.predicted * 1e3 / ms - 1) * 100,
                 min_err = (predicted_min(f.plans, costs, blocks, parts) * 1e3 / lo - 1) * 100;
    const Config& c = f.config;
    const std::string rs = c.r || c.s ? std::to_string(c.r) + "," + std::to_string(c.s) : "-";
    std::printf("%-16s %-13s %5s %10.3f %9.3f %9.3f %8.2fx %10.3f %+7.1f%% %+7.1f%% %7ld %7ld %10ld %10ld %10.1f\n",
                graph.c_str(), f.name.c_str(), rs.c_str(), ms, lo, hi, vs_seq, f.predicted * 1e3, err, min_err,
                static_cast<long>(merged), static_cast<long>(concurrent), static_cast<long>(f.states),
                static_cast<long>(f.profiled), f.search_s);
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,\"%s\",%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%ld,%ld,%ld,%ld,%.2f\n",
                  graph.c_str(), f.name.c_str(), rs.c_str(), ms, lo, hi, vs_seq, f.predicted * 1e3, err, min_err,
                  static_cast<long>(merged), static_cast<long>(concurrent), static_cast<long>(f.states),
                  static_cast<long>(f.profiled), f.search_s);
    csv += line;
  }
  if (csv_file.empty()) return;
  const bool fresh = !std::filesystem::exists(csv_file) || std::filesystem::file_size(csv_file) == 0;
  const std::string before = fresh ? std::string("graph,variant,r_s,latency_ms,latency_ms_min,latency_ms_max,"
                                                 "vs_sequential,predicted_ms,prediction_error_pct,"
                                                 "prediction_error_min_pct,merged,concurrent,dp_states,"
                                                 "stages_profiled,search_s\n")
                                   : read_file(csv_file);
  write_file_atomically(csv_file, before + csv);
}

// Profiling mode: stage latencies measured on the device (the CPU through
// oneDNN, or the GPU through cuDNN), every variant searched with them, and
// IOS-Both's final choice measured: per part, the DP's best `candidates`
// plans and the other variants' plans run end to end in turns, the fastest
// kept (ios-both-dp is the DP's best alone). Then each variant's plans end
// to end (median of `repeats`).
void profile_graph(const CnnGraph& g, const std::vector<std::vector<std::string>>& given,
                   const std::vector<Config>& configs, const ProfileSetup& o) {
  cnn::CnnRunner runner(g, o.batch, 1, o.impl);
  runner.run_all();  // every operator's inputs exist from here on
  runner.synchronize();
  cnn::StageCosts costs(g.name + " batch " + std::to_string(o.batch) + " cores " + std::to_string(o.cores) +
                            " device " + o.device + " (" + runner.backend().name() + ") kernels " + o.kernels,
                        o.stage_cache);
  std::vector<const CnnBlock*> blocks;
  std::vector<BlockPart> parts;
  for (const CnnBlock& b : g.blocks)
    for (BlockPart& part : given.empty() ? block_parts(b, o.part_size) : block_parts(b, given)) {
      blocks.push_back(&b);
      parts.push_back(std::move(part));
    }
  std::vector<Searched> found;
  std::string choices;
  for (const Config& c : configs) {
    Searched f;
    f.name = variant_name(c.variant);
    f.config = c;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<StagePlan>> runners_up;  // per part, the DP's best `candidates` (Both)
    for (size_t p = 0; p < parts.size(); ++p) {
      cnn::ProfilingCost cost(runner, *blocks[p], parts[p], o.cores, o.profile_repeats, &costs,
                              o.warm_stages ? 0 : runner.working_set_bytes());
      std::vector<StagePlan> best =
          schedule_best(parts[p].dag, cost, {c.variant, c.r, c.s}, c.variant == Variant::both ? o.candidates : 1);
      f.profiled += cost.profiled();
      f.states += best.front().states;
      f.predicted += best.front().cost;
      f.plans.push_back(best.front());
      runners_up.push_back(std::move(best));
    }
    f.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (c.variant != Variant::both) {
      found.push_back(std::move(f));
      continue;
    }
    f.name = "ios-both-dp";
    Searched chosen = choose_both(g.name, runner, blocks, parts, f, runners_up, found, o, choices);
    found.push_back(std::move(f));
    found.push_back(std::move(chosen));
  }
  costs.save();
  // End to end, the variants take turns (one run each per round, after a
  // warm-up round), so drifting load on a shared machine hits them alike.
  // Each round starts at the next variant, so none always runs first.
  for (int k = 0; k <= o.repeats; ++k)
    for (size_t i = 0; i < found.size(); ++i) {
      Searched& f = found[(i + static_cast<size_t>(k)) % found.size()];
      const double s = time_network(runner, blocks, parts, f.plans, o.cores);
      if (k > 0) f.ms.push_back(s * 1e3);
    }
  report_rows(g.name, found, costs, blocks, parts, o.csv);
  std::printf("%s# %s: %ld stage costs (%ld read from the cache file)\n", choices.c_str(), g.name.c_str(),
              static_cast<long>(costs.size()), static_cast<long>(costs.loaded()));
  if (o.explain)
    for (const Searched& f : found)
      if (f.name == "sequential" || f.name == "ios-both")
        explain_row(runner, blocks, parts, f, costs, o.cores, o.repeats, g.name);
  if (const auto* k = dynamic_cast<const cnn::CosaCnnKernels*>(&runner.kernels())) {
    const std::vector<cnn::ConvDecision> d = k->decisions();
    const auto on_cosa = std::count_if(d.begin(), d.end(), [](const cnn::ConvDecision& x) { return x.cosa; });
    double solve = 0;
    for (const cnn::ConvDecision& x : d) solve += x.solve_seconds;
    std::printf("# %s: %ld of %zu convolution layers (merged ones included) on CoSA kernels, %.2f s of MIP solves\n",
                g.name.c_str(), static_cast<long>(on_cosa), d.size(), solve);
    if (std::getenv("SYLVA_LOG"))
      for (const cnn::ConvDecision& x : d) std::printf("#   %s\n", x.line().c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> graphs{"inception_v3", "squeezenet", "randwire_large", "nasnet_large"};
  std::string data, schedule_out, dot_dir;
  int batch = 1, cores = 2, part_size = 32, repeats = 5, profile_repeats = 3, candidates = 3, choice_rounds = 5;
  std::string cost_model = "analytical", device = "cpu", kernels = "onednn";
  std::vector<std::string> pruning{"1,3", "2,4", "3,8"};
  CLI::App app{"IOS search on the IOS paper's CNN graphs (analytical stage cost model)"};
  app.add_option("--graphs", graphs, "graph names (in <data>/ios/graphs) or JSON files")->delimiter(';');
  app.add_option("--data", data, "directory holding ios/ (default: $SYLVA_DATA or shared/data)");
  app.add_option("--batch", batch, "batch size the cost model assumes")->capture_default_str();
  app.add_option("--cores", cores, "cores the cost model assumes")->capture_default_str();
  app.add_option("--part-size", part_size,
                 "operators per part when cutting large blocks (unless the graph ships <name>.parts.json)")
      ->capture_default_str();
  app.add_option("--pruning", pruning, "(r,s) pairs for IOS-Both, e.g. 3,8 (space separated)");
  app.add_option("--cost", cost_model,
                 "analytical (a model; instant) | profile (run each stage on this CPU through oneDNN, then each "
                 "variant's plans end to end)")
      ->capture_default_str();
  app.add_option("--device", device,
                 "profile: cpu (oneDNN, concurrent groups on threads) | cuda (cuDNN on GPU 0, concurrent groups on "
                 "CUDA streams)")
      ->capture_default_str();
  app.add_option("--kernels", kernels,
                 "profile on the CPU: onednn, cosa (every convolution on its CoSA-scheduled kernel) or auto (per "
                 "layer the faster of the two, measured on its first call)")
      ->capture_default_str();
  std::string kernels_cache;
  app.add_option("--kernels-cache", kernels_cache,
                 "auto: keep the measured per-layer choices in this file and reuse them on later runs "
                 "(SYLVA_COSA_CACHE; default: measure every run)");
  app.add_option("--repeats", repeats, "profile: end-to-end runs per variant (median, min-max)")->capture_default_str();
  app.add_option("--profile-repeats", profile_repeats, "profile: timed runs per stage during the search (after a warm-up)")
      ->capture_default_str();
  app.add_option("--candidates", candidates,
                 "profile: IOS-Both's measured final choice tries the DP's best this many plans per part, beside the "
                 "other variants' plans")
      ->capture_default_str();
  app.add_option("--choice-rounds", choice_rounds, "profile: timed rounds of the final choice (median)")
      ->capture_default_str();
  bool explain = false, warm_stages = false;
  app.add_flag("--warm-stages", warm_stages,
               "profile on the CPU: time each stage again and again as it is, without first passing the rest of "
               "the network's bytes through the caches (as before 2026-12-07)");
  app.add_flag("--explain", explain,
               "profile: time Sequential's and IOS-Both's stages inside runs of their plans and set them beside the "
               "costs the search measured for them alone, per kind of stage");
  std::string stage_cache, csv;
  app.add_option("--csv", csv, "profile: append every row to this CSV (with a header when new)");
  app.add_option("--stage-cache", stage_cache,
                 "profile: keep the measured stage costs in this file and reuse them when graph, batch, cores, "
                 "device and kernels are the same (a second search is then instant)");
  app.add_option("--schedule-out", schedule_out, "write the first graph with its IOS-Both schedule (last r,s) here");
  app.add_option("--dot-dir", dot_dir, "write a DOT file of each block part's IOS-Both plan (last r,s) here");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Config> configs{{Variant::sequential, 0, 0}, {Variant::greedy, 0, 0}};
    for (const std::string& rs : pruning) {
      int r = 0, s = 0;
      SYLVA_CHECK(std::sscanf(rs.c_str(), "%d,%d", &r, &s) == 2 && r >= 0 && s >= 0, "[bench_ios] --pruning '", rs,
                  "' is not r,s");
      for (Variant v : {Variant::merge, Variant::parallel, Variant::both}) configs.push_back({v, r, s});
    }
    SYLVA_CHECK(cost_model == "analytical" || cost_model == "profile", "[bench_ios] --cost is analytical or profile, got '",
                cost_model, "'");
    SYLVA_CHECK(device == "cpu" || device == "cuda", "[bench_ios] --device is cpu or cuda, got '", device, "'");
    const bool profile = cost_model == "profile";
    SYLVA_CHECK(profile || device == "cpu", "[bench_ios] --device cuda needs --cost profile");
    SYLVA_CHECK(kernels == "onednn" || kernels == "cosa" || kernels == "auto",
                "[bench_ios] --kernels is onednn, cosa or auto, got '", kernels, "'");
    SYLVA_CHECK(kernels == "onednn" || (profile && device == "cpu"),
                "[bench_ios] --kernels ", kernels, " needs --cost profile on --device cpu");
    SYLVA_CHECK(kernels_cache.empty() || kernels == "auto", "[bench_ios] --kernels-cache needs --kernels auto");
    SYLVA_CHECK(profile || (csv.empty() && stage_cache.empty()), "[bench_ios] --csv and --stage-cache need --cost profile");
    if (!kernels_cache.empty()) setenv("SYLVA_COSA_CACHE", kernels_cache.c_str(), 1);  // what Impl::cosa_pick reads
    const cnn::Impl impl = device == "cuda"       ? cnn::Impl::cudnn
                           : kernels == "cosa"    ? cnn::Impl::cosa
                           : kernels == "auto"    ? cnn::Impl::cosa_pick
                                                  : cnn::Impl::onednn;
    if (profile) {
      const std::string where = device == "cuda" ? "the GPU (cuDNN, float32, FMA math)"
                                                 : std::to_string(cores) + " cores (" +
                                                       (kernels == "onednn" ? std::string("oneDNN")
                                                                            : "oneDNN, convolutions: " + kernels) +
                                                       ", float32)";
      std::printf("# bench_ios: profiling cost model, batch %d, %s; latency of the whole network in ms, median "
                  "(min max) of %d runs, variants in turn; vs seq: median over the rounds of Sequential's time over the "
                  "variant's; pred err: predicted over measured median, less 1; min err: the stages' fastest runs "
                  "summed over the fastest run; merged / "
                  "concur: stages merged / of two or more groups; ios-both: the measured choice, ios-both-dp: "
                  "the DP's best alone\n",
                  batch, where.c_str(), repeats);
      std::printf("%-16s %-13s %5s %10s %9s %9s %9s %10s %8s %8s %7s %7s %10s %10s %10s\n", "graph", "variant", "r,s",
                  "latency", "min", "max", "vs seq", "predicted", "pred err", "min err", "merged", "concur",
                  "DP states", "profiled", "search s");
    } else {
      std::printf("# bench_ios: analytical cost model (batch %d, %d cores); costs are model milliseconds, not "
                  "measurements\n",
                  batch, cores);
      std::printf("%-16s %-13s %5s %10s %9s %12s %12s %10s\n", "graph", "variant", "r,s", "cost ms", "vs seq",
                  "DP states", "stages cost", "search s");
    }
    for (size_t gi = 0; gi < graphs.size(); ++gi) {
      const std::string path = find_graph(graphs[gi], data);
      const CnnGraph g = read_ios_graph(path);
      // The IOS project's own partition of a block, where it ships one (NasNet).
      std::vector<std::vector<std::string>> given;
      const std::string parts_file = path.substr(0, path.size() - std::string(".seq.json").size()) + ".parts.json";
      if (path.ends_with(".seq.json") && std::filesystem::exists(parts_file)) {
        given = read_parts(parts_file);
        SYLVA_CHECK(g.blocks.size() == 1, "[bench_ios] ", parts_file, " partitions one block, but ", path, " has ",
                    g.blocks.size());
        std::printf("# %s: the %zu parts of %s\n", g.name.c_str(), given.size(), parts_file.c_str());
      }
      if (profile) {
        const std::string cache = stage_cache.empty() || graphs.size() == 1 ? stage_cache : stage_cache + "." + g.name;
        profile_graph(g, given, configs,
                      {part_size, batch, cores, repeats, profile_repeats, candidates, choice_rounds, explain, warm_stages, impl, device,
                       kernels, cache, csv});
        continue;
      }
      double seq_cost = 0;
      std::vector<std::vector<std::vector<std::vector<std::string>>>> written(g.blocks.size());
      for (const Config& c : configs) {
        double cost = 0;
        int64_t states = 0, costed = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t b = 0; b < g.blocks.size(); ++b) {
          const std::vector<const CnnNode*> ops = g.blocks[b].ops();
          const std::vector<BlockPart> parts =
              given.empty() ? block_parts(g.blocks[b], part_size) : block_parts(g.blocks[b], given);
          for (const BlockPart& part : parts) {
            AnalyticalCost model(ops, part, batch, cores);
            const StagePlan p = schedule(part.dag, model, {c.variant, c.r, c.s});
            cost += p.cost;
            states += p.states;
            costed += p.stages_costed;
            const bool last = &c == &configs.back();
            if (last && gi == 0 && !schedule_out.empty()) {
              // Merged stages cannot be written in this format: write the IOS-Parallel plan there.
              const StagePlan par = schedule(part.dag, model, {Variant::parallel, c.r, c.s});
              for (auto& st : stage_names(g.blocks[b], part, par)) written[b].push_back(std::move(st));
            }
            if (last && !dot_dir.empty()) {
              std::vector<std::string> names;
              for (int v : part.ops) names.push_back(ops[static_cast<size_t>(v)]->name);
              write_file_atomically(dot_dir + "/" + g.name + "_b" + std::to_string(b) + "_p" +
                                        std::to_string(part.ops.front()) + ".dot",
                                    plan_dot(part.dag, p, names));
            }
          }
        }
        const double search = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (c.variant == Variant::sequential) seq_cost = cost;
        const std::string rs = c.r || c.s ? std::to_string(c.r) + "," + std::to_string(c.s) : "-";
        std::printf("%-16s %-13s %5s %10.3f %8.2fx %12ld %12ld %10.3f\n", g.name.c_str(), variant_name(c.variant),
                    rs.c_str(), cost * 1e3, seq_cost / cost, static_cast<long>(states), static_cast<long>(costed),
                    search);
        std::fflush(stdout);
      }
      if (gi == 0 && !schedule_out.empty()) {
        write_ios_graph(g.source, schedule_out, written);
        std::printf("wrote %s (IOS-Parallel stages, last r,s)\n", schedule_out.c_str());
      }
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
