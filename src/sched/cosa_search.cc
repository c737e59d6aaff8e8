// CoSA's search baselines on the analytical model: random search (random-5,
// best of N, or a time budget) and a Timeloop-style hybrid mapper on threads.
#include "sylva/sched/cosa_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sylva/core/device.h"
#include "sylva/core/error.h"
#include "sylva/sched/cosa.h"

namespace sylva::cosa {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t dram_traffic(const Evaluation& e) {
  return e.dram_reads[Weights] + e.dram_reads[Inputs] + e.dram_reads[Outputs] + e.dram_updates;
}

int dim_index(char name) {
  return static_cast<int>(std::find(kDimNames.begin(), kDimNames.end(), name) - kDimNames.begin());
}

// One thread's search state: its best, its counters, and when it must stop.
struct Worker {
  const Problem& p;
  const Arch& a;
  const Mapspace& ms;
  const HybridOptions& o;
  int64_t budget;  // mappings this thread may draw
  bool timed;
  Clock::time_point deadline;
  SearchResult best;
  int64_t stale = 0;  // valid mappings in a row that did not improve `best`

  bool done() const { return stale >= o.victory || best.sampled >= budget || (timed && Clock::now() >= deadline); }
  void consider(const Mapping& m, Evaluation&& e) {
    ++best.valid;
    if (!best.found || better(e, best.evaluation)) {
      best.mapping = m;
      best.evaluation = std::move(e);
      best.found = true;
      stale = 0;
    } else {
      ++stale;
    }
  }

  // Loop orders of a valid tiling `m` (evaluated as `e`). Per level, only the
  // order of the dimensions with a temporal factor > 1 (`active`) matters; the
  // rest go last in RSPQCKN order.
  void explore_orders(Mapping& m, Evaluation&& e, std::mt19937_64& rng) {
    const size_t L = m.levels.size();
    std::vector<std::string> active(L), tail(L);
    int64_t combos = 1;  // saturates just past max_orders
    for (size_t i = 0; i < L; ++i) {
      const LevelMapping& l = m.levels[i];
      for (char c : l.temporal_permutation)
        if (l.temporal[static_cast<size_t>(dim_index(c))] > 1) active[i] += c;
      for (char c : kDimNames)
        if (l.temporal[static_cast<size_t>(dim_index(c))] == 1) tail[i] += c;
      for (int64_t k = 2; k <= static_cast<int64_t>(active[i].size()); ++k)
        combos = std::min<int64_t>(combos * k, o.max_orders + 1);
    }
    const auto key = [&] {
      std::string s;
      for (const std::string& act : active) s += act + '|';
      return s;
    };
    const auto apply_and_evaluate = [&] {
      for (size_t i = 0; i < L; ++i) m.levels[i].temporal_permutation = active[i] + tail[i];
      apply_stationary(m, ms);  // orders outside the mapspace become one inside it (evaluated again: harmless)
      ++best.sampled;
      Evaluation ev = evaluate(m, p, a);
      if (ev.valid) consider(m, std::move(ev));
    };
    for (size_t i = 0; i < L; ++i) m.levels[i].temporal_permutation = active[i] + tail[i];
    apply_stationary(m, ms);
    consider(m, std::move(e));  // the drawn orders (normalized: evaluate skips factors of 1)
    if (combos == 1) return;
    const std::string drawn = key();
    if (combos <= o.max_orders) {
      // Every combination: an odometer of per-level next_permutation over sorted orders.
      for (std::string& act : active) std::sort(act.begin(), act.end());
      for (bool more = true; more && !done();) {
        if (key() != drawn) apply_and_evaluate();
        more = false;
        for (size_t i = 0; i < L && !more; ++i) more = std::next_permutation(active[i].begin(), active[i].end());
      }
      return;
    }
    // Random distinct combinations; the cap on attempts only guards against bad luck.
    std::set<std::string> seen{drawn};
    for (int64_t tried = 1, attempts = 0; tried < o.max_orders && attempts < 64LL * o.max_orders && !done();
         ++attempts) {
      for (std::string& act : active) std::shuffle(act.begin(), act.end(), rng);
      if (!seen.insert(key()).second) continue;
      apply_and_evaluate();
      ++tried;
    }
  }

  void run(uint64_t seed) {
    std::mt19937_64 rng(seed);
    while (!done()) {
      Mapping m = random_mapping(p, a, ms, rng);
      ++best.sampled;
      if (!fits_fanout(m, a)) continue;
      Evaluation e = evaluate(m, p, a);
      if (!e.valid) continue;  // capacity: no loop order helps
      explore_orders(m, std::move(e), rng);
    }
  }
};

}  // namespace

bool better(const Evaluation& a, const Evaluation& b) {
  if (a.valid != b.valid) return a.valid;
  if (!a.valid) return false;
  if (a.cycles != b.cycles) return a.cycles < b.cycles;
  return dram_traffic(a) < dram_traffic(b);
}

// The RNG is consumed as sylva-cosa's original random search did (orders
// first, then one level draw and one coin per factor), so seeds keep their results.
Mapping random_mapping(const Problem& p, const Arch& a, const Mapspace& ms, std::mt19937_64& rng) {
  Mapping m = blank_mapping(a, ms);
  for (LevelMapping& l : m.levels) std::shuffle(l.temporal_permutation.begin(), l.temporal_permutation.end(), rng);
  apply_stationary(m, ms);
  std::uniform_int_distribution<size_t> level(0, a.levels.size() - 1);
  for (int d = 0; d < kDims; ++d)
    for (int64_t q : prime_factors(p.bounds[static_cast<size_t>(d)])) {
      const size_t i = level(rng);
      const bool spatial = m.levels[i].has_spatial && ms.spatial_allowed(static_cast<int>(i), d) && (rng() & 1);
      (spatial ? m.levels[i].spatial : m.levels[i].temporal)[static_cast<size_t>(d)] *= q;
    }
  return m;
}

bool fits_fanout(const Mapping& m, const Arch& a) {
  for (size_t i = 0; i < m.levels.size(); ++i) {
    int64_t f = 1;
    for (int64_t s : m.levels[i].spatial) f *= s;
    if (f > a.fanout(static_cast<int>(i))) return false;
  }
  return true;
}

SearchResult random_search(const Problem& p, const Arch& a, const Mapspace& ms, const RandomOptions& o) {
  SYLVA_CHECK(o.valid >= 1, "[cosa random_search] valid (mappings to find) must be >= 1, got ", o.valid);
  SYLVA_CHECK(o.seconds >= 0 && std::isfinite(o.seconds),
              "[cosa random_search] seconds (time budget) must be >= 0, got ", o.seconds);
  SYLVA_CHECK(o.max_samples >= 1, "[cosa random_search] max_samples must be >= 1, got ", o.max_samples);
  const auto t0 = Clock::now();
  const bool timed = o.seconds > 0;
  std::mt19937_64 rng(o.seed);
  SearchResult best;
  while (best.sampled < o.max_samples && (timed ? seconds_since(t0) < o.seconds : best.valid < o.valid)) {
    Mapping m = random_mapping(p, a, ms, rng);
    ++best.sampled;
    if (!fits_fanout(m, a)) continue;
    Evaluation e = evaluate(m, p, a);
    if (!e.valid) continue;
    ++best.valid;
    if (!best.found || better(e, best.evaluation)) {
      best.mapping = std::move(m);
      best.evaluation = std::move(e);
      best.found = true;
    }
  }
  best.seconds = seconds_since(t0);
  return best;
}

SearchResult hybrid_search(const Problem& p, const Arch& a, const Mapspace& ms, const HybridOptions& o) {
  SYLVA_CHECK(o.threads >= 0, "[cosa hybrid_search] threads must be >= 0 (0: all cores), got ", o.threads);
  SYLVA_CHECK(o.victory >= 1, "[cosa hybrid_search] victory (valid mappings without improvement) must be >= 1, got ",
              o.victory);
  SYLVA_CHECK(o.seconds >= 0 && std::isfinite(o.seconds),
              "[cosa hybrid_search] seconds (time budget) must be >= 0, got ", o.seconds);
  SYLVA_CHECK(o.max_orders >= 1, "[cosa hybrid_search] max_orders (loop orders per tiling) must be >= 1, got ",
              o.max_orders);
  SYLVA_CHECK(o.max_samples >= 1, "[cosa hybrid_search] max_samples must be >= 1, got ", o.max_samples);
  const auto t0 = Clock::now();
  const int n = o.threads > 0 ? o.threads : usable_cpu_cores();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<Worker> workers;
  workers.reserve(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t)
    workers.push_back(
        Worker{p, a, ms, o, o.max_samples / n + (t < o.max_samples % n ? 1 : 0), o.seconds > 0, deadline, {}, 0});
  // Each thread touches only its own Worker and error slot; an exception
  // (e.g. an arch without DRAM) must not escape a std::thread.
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(n));
    for (int t = 0; t < n; ++t)
      threads.emplace_back([&, t] {
        try {
          workers[static_cast<size_t>(t)].run(o.seed + static_cast<uint64_t>(t));
        } catch (...) {
          errors[static_cast<size_t>(t)] = std::current_exception();
        }
      });
    for (std::thread& th : threads) th.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  SearchResult out;
  for (Worker& w : workers) {  // in thread order: ties keep the lower thread's mapping
    out.sampled += w.best.sampled;
    out.valid += w.best.valid;
    if (w.best.found && (!out.found || better(w.best.evaluation, out.evaluation))) {
      out.mapping = std::move(w.best.mapping);
      out.evaluation = std::move(w.best.evaluation);
      out.found = true;
    }
  }
  out.seconds = seconds_since(t0);
  return out;
}

}  // namespace sylva::cosa
