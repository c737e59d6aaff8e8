// sylva-cosa: CoSA's one-shot MIP schedule of a layer, the analytical model
// of any mapping, random-search baselines, and a whole network's table.
//
//   sylva-cosa schedule --arch A --problem P [--mapspace M] [--weights u,c,t,l] -o map.yaml
//   sylva-cosa evaluate --arch A --problem P --mapping map.yaml
//   sylva-cosa search --algo random --arch A --problem P [--mapspace M] [--valid 5] [--seed 1] [-o map.yaml]
//   sylva-cosa batch --arch A --layers net/layers.yaml [--mapspace M] [--random-valid 5] [--best-of 1000]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/sched/cosa.h"

using namespace sylva;
using namespace sylva::cosa;

namespace {

Mapspace mapspace_or_default(const std::string& path, const Arch& a) {
  if (!path.empty()) return read_mapspace(path, a);
  Mapspace ms;
  ms.keep.assign(a.levels.size(), {true, true, true});
  return ms;
}

// A random mapping: every prime factor to a random level (spatially where
// the level fans out, with probability 1/2), random loop orders.
Mapping random_mapping(const Problem& p, const Arch& a, const Mapspace& ms, std::mt19937_64& rng) {
  Mapping m = blank_mapping(a, ms);
  for (LevelMapping& l : m.levels) std::shuffle(l.temporal_permutation.begin(), l.temporal_permutation.end(), rng);
  std::uniform_int_distribution<size_t> level(0, a.levels.size() - 1);
  for (int d = 0; d < kDims; ++d)
    for (int64_t q : prime_factors(p.bounds[static_cast<size_t>(d)])) {
      const size_t i = level(rng);
      const bool spatial = m.levels[i].has_spatial && (rng() & 1);
      (spatial ? m.levels[i].spatial : m.levels[i].temporal)[static_cast<size_t>(d)] *= q;
    }
  return m;
}

struct Searched {
  Mapping mapping;
  Evaluation evaluation;
  int64_t sampled = 0;
  double seconds = 0;
};

// The paper's random baseline: sample until `valid` mappings fit (fan-out
// and capacity), keep the fewest cycles.
Searched random_search(const Problem& p, const Arch& a, const Mapspace& ms, int valid, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed);
  Searched best;
  int found = 0;
  while (found < valid) {
    SYLVA_CHECK(best.sampled < 100000000, "[sylva-cosa] no valid random mapping of '", p.name, "' in 1e8 samples");
    Mapping m = random_mapping(p, a, ms, rng);
    ++best.sampled;
    int64_t fan_ok = 1;
    for (size_t i = 0; i < m.levels.size() && fan_ok; ++i) {
      int64_t f = 1;
      for (int64_t s : m.levels[i].spatial) f *= s;
      fan_ok = f <= a.fanout(static_cast<int>(i));
    }
    if (!fan_ok) continue;
    Evaluation e = evaluate(m, p, a);
    if (!e.valid) continue;
    ++found;
    if (found == 1 || e.cycles < best.evaluation.cycles) {
      best.mapping = std::move(m);
      best.evaluation = e;
    }
  }
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

void print(const char* what, const Evaluation& e, double seconds) {
  std::printf("%s: %s, %lld cycles (compute %lld), utilization %.3f, DRAM reads W/I/O %lld/%lld/%lld, updates %lld, "
              "%.3f s\n",
              what, e.valid ? "valid" : ("INVALID: " + e.why).c_str(), static_cast<long long>(e.cycles),
              static_cast<long long>(e.compute_cycles), e.utilization, static_cast<long long>(e.dram_reads[Weights]),
              static_cast<long long>(e.dram_reads[Inputs]), static_cast<long long>(e.dram_reads[Outputs]),
              static_cast<long long>(e.dram_updates), seconds);
}

ObjectiveWeights parse_weights(const std::string& text) {
  ObjectiveWeights w;
  if (text.empty()) return w;
  SYLVA_CHECK(std::sscanf(text.c_str(), "%lf,%lf,%lf,%lf", &w.utilization, &w.compute, &w.traffic, &w.latency) == 4,
              "[sylva-cosa] --weights is utilization,compute,traffic,latency (e.g. 1,1,1,1), got '", text, "'");
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CoSA: one-shot MIP scheduling of layers on Timeloop-style accelerators (CBC), the analytical model, "
               "random search"};
  app.require_subcommand(1);
  std::string arch, problem, mapspace, mapping, out, weights, algo = "random", layers;
  int valid = 5, best_of = 1000;
  uint64_t seed = 1;
  const auto common = [&](CLI::App* c) {
    c->add_option("--arch", arch, "architecture YAML (Timeloop v1)")->required();
    c->add_option("--mapspace", mapspace, "keep/bypass constraints (default: every level keeps every tensor)");
  };
  CLI::App* sched = app.add_subcommand("schedule", "solve CoSA's MIP for a layer and write the mapping");
  common(sched);
  sched->add_option("--problem", problem, "layer YAML")->required();
  sched->add_option("--weights", weights, "objective weights utilization,compute,traffic,latency (default 1,1,1,1)");
  sched->add_option("-o,--output", out, "write the mapping here (Timeloop v1 mapping YAML)");
  CLI::App* eval = app.add_subcommand("evaluate", "the analytical model of a mapping");
  common(eval);
  eval->add_option("--problem", problem, "layer YAML")->required();
  eval->add_option("--mapping", mapping, "mapping YAML")->required();
  CLI::App* search = app.add_subcommand("search", "random search on the same model");
  common(search);
  search->add_option("--problem", problem, "layer YAML")->required();
  search->add_option("--algo", algo, "random (hybrid search is not built)")->capture_default_str();
  search->add_option("--valid", valid, "stop after this many valid mappings (the paper's random-5: 5)")
      ->capture_default_str();
  search->add_option("--seed", seed, "random seed")->capture_default_str();
  search->add_option("-o,--output", out, "write the best mapping here");
  CLI::App* batch = app.add_subcommand("batch", "CoSA and random search over a network's layers.yaml");
  common(batch);
  batch->add_option("--layers", layers, "a network's layers.yaml (layer names; files beside it)")->required();
  batch->add_option("--weights", weights, "objective weights utilization,compute,traffic,latency");
  batch->add_option("--random-valid", valid, "random search: valid mappings per layer")->capture_default_str();
  batch->add_option("--best-of", best_of, "the second random search: best of this many valid mappings")
      ->capture_default_str();
  batch->add_option("--seed", seed, "random seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const Arch a = read_arch(arch);
    const Mapspace ms = mapspace_or_default(mapspace, a);
    if (*sched) {
      const Problem p = read_problem(problem);
      const Result r = schedule(p, a, ms, parse_weights(weights));
      std::printf("CoSA MIP: %d variables, %d constraints, objective %.4f\n", r.variables, r.constraints, r.objective);
      print(p.name.c_str(), r.evaluation, r.solve_seconds);
      if (!out.empty()) write_file_atomically(out, mapping_yaml(r.mapping));
      else std::fputs(mapping_yaml(r.mapping).c_str(), stdout);
    } else if (*eval) {
      const Problem p = read_problem(problem);
      print(p.name.c_str(), evaluate(read_mapping(mapping, a), p, a), 0.0);
    } else if (*search) {
      SYLVA_CHECK(algo == "random", "[sylva-cosa] --algo '", algo, "': only random search is built");
      const Problem p = read_problem(problem);
      const Searched s = random_search(p, a, ms, valid, seed);
      std::printf("random search: %lld samples for %d valid mappings\n", static_cast<long long>(s.sampled), valid);
      print(p.name.c_str(), s.evaluation, s.seconds);
      if (!out.empty()) write_file_atomically(out, mapping_yaml(s.mapping));
    } else if (*batch) {
      std::printf("%-22s %12s %8s %12s %8s %12s %8s %9s %9s\n", "layer", "CoSA cycles", "CoSA s", "random-5",
                  "rand s", "best-1000", "b1000 s", "vs rand5", "vs b1000");
      double log_sum = 0, log_sum_best = 0, cosa_s = 0, rand_s = 0, best_s = 0;
      int n = 0;
      for (const std::string& file : read_layer_list(layers)) {
        const Problem p = read_problem(file);
        const Result r = schedule(p, a, ms, parse_weights(weights));
        const Searched s = random_search(p, a, ms, valid, seed);
        const Searched b = random_search(p, a, ms, best_of, seed + 1);
        const auto cycles = static_cast<double>(r.evaluation.cycles);
        const double speedup = static_cast<double>(s.evaluation.cycles) / cycles;
        const double speedup_best = static_cast<double>(b.evaluation.cycles) / cycles;
        std::printf("%-22s %12lld %8.2f %12lld %8.2f %12lld %8.2f %8.2fx %8.2fx%s\n", p.name.c_str(),
                    static_cast<long long>(r.evaluation.cycles), r.solve_seconds,
                    static_cast<long long>(s.evaluation.cycles), s.seconds, static_cast<long long>(b.evaluation.cycles),
                    b.seconds, speedup, speedup_best, r.evaluation.valid ? "" : "  (CoSA mapping INVALID in the model)");
        std::fflush(stdout);
        log_sum += std::log(speedup);
        log_sum_best += std::log(speedup_best);
        cosa_s += r.solve_seconds;
        rand_s += s.seconds;
        best_s += b.seconds;
        ++n;
      }
      std::printf("%d layers: geomean speedup of CoSA over random-%d %.2fx, over best of %d valid random %.2fx; CoSA "
                  "%.1f s in all (%.2f s per layer), random-%d %.1f s, best of %d %.1f s\n",
                  n, valid, std::exp(log_sum / std::max(n, 1)), best_of, std::exp(log_sum_best / std::max(n, 1)), cosa_s,
                  cosa_s / std::max(n, 1), valid, rand_s, best_of, best_s);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
