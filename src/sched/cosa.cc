// CoSA's mixed-integer program, built with COIN-OR's Osi/Clp interface and
// solved by CBC; decoding to a mapping; loop orders of the outer levels by
// the analytical model.
#include "sylva/sched/cosa.h"

#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "sylva/core/error.h"

namespace sylva::cosa {

namespace {

constexpr double kEps = 1e-9;  // slack on log-form right-hand sides (rounding of exact fits)

// A group of identical prime factors of one dimension: one MIP variable per
// place counts how many of its copies sit there (the paper's binaries
// without their symmetric solutions).
struct Factor {
  int dim;
  int64_t value;
  double log_value;
  int copies;
};

// A place for a factor: a level, temporal or spatial.
struct Place {
  int level;
  bool spatial;
};

// The outermost level inside DRAM that keeps each tensor.
std::array<int, kTensors> keepers(const Arch& a, const Mapspace& ms) {
  std::array<int, kTensors> c{-1, -1, -1};
  const int L = static_cast<int>(a.levels.size());
  for (int t = 0; t < kTensors; ++t)
    for (int i = L - 2; i >= 0 && c[t] < 0; --i)
      if (ms.keep[static_cast<size_t>(i)][t]) c[t] = i;
  for (int t = 0; t < kTensors; ++t)
    SYLVA_CHECK(c[t] >= 0, "[cosa] the mapspace keeps ", tensor_name(t), " in no level inside DRAM");
  return c;
}

// log of tensor t's tile at level i from log-factors per (level, dim), with
// the sliding window of Inputs bounded by stride x dilation x P x R (and the
// same for H): an upper bound that keeps the MIP's capacity rows linear.
double log_capacity(const Arch& a, const Mapspace& ms, int i) {
  int kept = 0;
  for (int t = 0; t < kTensors; ++t) kept += ms.keep[static_cast<size_t>(i)][t];
  const Level& l = a.levels[static_cast<size_t>(i)];
  return std::log(static_cast<double>(l.entries) / (std::max(kept, 1) * std::max(l.multiple_buffering, 1.0)));
}

double inputs_window_log(const Problem& p) {
  return std::log(static_cast<double>(p.w_stride * p.w_dilation * p.h_stride * p.h_dilation));
}

std::vector<Place> places_of(const Arch& a) {
  std::vector<Place> s;
  for (int i = 0; i < static_cast<int>(a.levels.size()); ++i) {
    s.push_back({i, false});
    if (a.fanout(i) > 1) s.push_back({i, true});
  }
  return s;
}

// What the MIP and mip_objective share: the factor groups, the places,
// each tensor's keeper just inside DRAM, and which placements refetch a
// tensor from DRAM.
struct Layout {
  const Problem& p;
  const Arch& a;
  const Mapspace& ms;
  std::vector<Factor> factors;
  std::vector<Place> places;
  std::array<int, kTensors> keeper;
  int lowest_keeper;

  Layout(const Problem& problem, const Arch& arch, const Mapspace& mapspace)
      : p(problem), a(arch), ms(mapspace), places(places_of(arch)), keeper(keepers(arch, mapspace)) {
    lowest_keeper = *std::min_element(keeper.begin(), keeper.end());
    for (int j = 0; j < kDims; ++j)
      for (int64_t q : prime_factors(p.bounds[static_cast<size_t>(j)])) {
        if (!factors.empty() && factors.back().dim == j && factors.back().value == q) ++factors.back().copies;
        else factors.push_back({j, q, std::log(static_cast<double>(q)), 1});
      }
  }

  // Whether a factor of dimension j at `s` multiplies t's DRAM traffic
  // before reuse: inside the keeper when it indexes t (the tile), above it
  // when temporal (refetches, unless reused through the loop order) or when
  // spatial and indexing t (distinct copies; the rest is multicast). The
  // factors indexing t count once wherever they sit.
  bool refetches(int t, int j, const Place& s) const {
    return s.level <= keeper[t] ? relevant(t, j) : (!s.spatial || relevant(t, j));
  }
  double bandwidth(int t) const {
    return t == Outputs ? a.levels.back().write_bandwidth : a.levels.back().read_bandwidth;
  }
  double traffic_constant(int t) const { return t == Inputs ? inputs_window_log(p) : 0.0; }
};

// A level's loop order with the loops that do not index t innermost.
std::string innermost_first(int t) {
  std::string inner, outer;
  for (int d = 0; d < kDims; ++d) (relevant(t, d) ? outer : inner) += kDimNames[static_cast<size_t>(d)];
  return inner + outer;
}

// Loop orders of the levels above the innermost keeper: per level, from the
// outermost in, every order of its loops with a factor above 1, the best
// (fewest cycles, then least DRAM traffic) kept.
void choose_orders(Mapping& m, const Problem& p, const Arch& a, int lowest) {
  const auto score = [&](const Mapping& mm) {
    const Evaluation e = evaluate(mm, p, a);
    const int64_t traffic = e.dram_reads[0] + e.dram_reads[1] + e.dram_reads[2] + e.dram_updates;
    return std::pair<int64_t, int64_t>{e.cycles, traffic};
  };
  for (int i = static_cast<int>(a.levels.size()) - 1; i > lowest; --i) {
    LevelMapping& l = m.levels[static_cast<size_t>(i)];
    std::string moving, fixed;
    for (int d = 0; d < kDims; ++d) (l.temporal[static_cast<size_t>(d)] > 1 ? moving : fixed) += kDimNames[static_cast<size_t>(d)];
    if (moving.size() < 2) continue;
    std::sort(moving.begin(), moving.end());
    std::string best = l.temporal_permutation;
    auto best_score = score(m);
    do {
      l.temporal_permutation = moving + fixed;
      const auto s = score(m);
      if (s < best_score) {
        best_score = s;
        best = l.temporal_permutation;
      }
    } while (std::next_permutation(moving.begin(), moving.end()));
    l.temporal_permutation = best;
  }
}

// The MIP as it is built: columns (cost, bounds, integrality) and rows.
struct Program {
  std::vector<double> obj, lo, hi;
  std::vector<bool> integer;
  std::vector<CoinPackedVector> rows;
  std::vector<double> row_lo, row_hi;

  int column(double c, double l, double h, bool is_int) {
    obj.push_back(c);
    lo.push_back(l);
    hi.push_back(h);
    integer.push_back(is_int);
    return static_cast<int>(obj.size()) - 1;
  }
  void add_row(CoinPackedVector r, double l, double h) {
    rows.push_back(std::move(r));
    row_lo.push_back(l);
    row_hi.push_back(h);
  }
};

// The MIP's column indices. x[f][s]: integer copies of factor group f at
// place s. Above the keepers, the loop-order columns: z[i][t] (binary: level
// i's loops that do not index t are its innermost), moving[t][i] (binary: a
// loop indexing t iterates at a level between t's keeper and i), reused[t]
// (continuous, (factor, column): copies of f at a level that do not refetch t).
struct Columns {
  int places = 0;
  std::vector<int> x;
  std::vector<std::array<int, kTensors>> z;
  std::array<std::vector<int>, kTensors> moving;
  std::array<std::vector<std::pair<size_t, int>>, kTensors> reused;

  int X(size_t f, int s) const { return x[f * static_cast<size_t>(places) + static_cast<size_t>(s)]; }
};

// The place of level `level`'s temporal loops.
int temporal_place(const std::vector<Place>& places, int level) {
  for (int s = 0; s < static_cast<int>(places.size()); ++s)
    if (places[static_cast<size_t>(s)].level == level && !places[static_cast<size_t>(s)].spatial) return s;
  SYLVA_THROW("[cosa] level ", level, " has no temporal place");
}

// Whether a temporal factor of `dim` at `level` makes the CPU kernel's
// block run again (ObjectiveWeights::blocks): every one above level 1,
// except the reduction loops at level 2 when the mapspace holds the
// outputs there -- they run innermost at that level, right above L1's
// tile, and run_conv folds them into the block.
bool reruns_block(const Mapspace& ms, int level, int dim) {
  return level >= 2 && !(level == 2 && ms.stationary_at(2) == Outputs && !relevant(Outputs, dim));
}

// Adds the x columns, each costed by its log-factor times the weights of what it changes.
void add_placements(Program& mip, Columns& c, const Layout& lay, const ObjectiveWeights& w) {
  const std::vector<Factor>& factors = lay.factors;
  c.places = static_cast<int>(lay.places.size());
  c.x.resize(factors.size() * static_cast<size_t>(c.places));
  for (size_t f = 0; f < factors.size(); ++f)
    for (int s = 0; s < c.places; ++s) {
      const Place& sl = lay.places[static_cast<size_t>(s)];
      double cost =
          (sl.spatial ? -w.utilization : w.compute + (reruns_block(lay.ms, sl.level, factors[f].dim) ? w.blocks : 0.0));
      for (int t = 0; t < kTensors; ++t) cost += w.traffic * lay.refetches(t, factors[f].dim, sl);
      const bool allowed = !sl.spatial || lay.ms.spatial_allowed(sl.level, factors[f].dim);
      c.x[f * static_cast<size_t>(c.places) + static_cast<size_t>(s)] =
          mip.column(factors[f].log_value * cost, 0, allowed ? factors[f].copies : 0, true);
    }
}

// Adds the rows on x alone: each factor placed once, spatial factors within
// the fan-out, each kept tile within its share of the level.
void add_placement_rows(Program& mip, const Columns& c, const Layout& lay, const Mapspace& ms) {
  const std::vector<Factor>& factors = lay.factors;
  const std::vector<Place>& places = lay.places;
  const int S = c.places;
  for (size_t f = 0; f < factors.size(); ++f) {
    CoinPackedVector r;
    for (int s = 0; s < S; ++s) r.insert(c.X(f, s), 1.0);
    mip.add_row(r, factors[f].copies, factors[f].copies);
  }
  for (int s = 0; s < S; ++s) {
    if (!places[static_cast<size_t>(s)].spatial) continue;
    CoinPackedVector r;
    for (size_t f = 0; f < factors.size(); ++f) r.insert(c.X(f, s), factors[f].log_value);
    const int64_t fanout = lay.a.fanout(places[static_cast<size_t>(s)].level);
    mip.add_row(r, -COIN_DBL_MAX, std::log(static_cast<double>(fanout)) + kEps);
  }
  for (int i = 0; i + 1 < static_cast<int>(lay.a.levels.size()); ++i)
    for (int t = 0; t < kTensors; ++t) {
      if (!ms.keep[static_cast<size_t>(i)][t]) continue;
      CoinPackedVector r;
      for (size_t f = 0; f < factors.size(); ++f)
        for (int s = 0; s < S; ++s)
          if (places[static_cast<size_t>(s)].level <= i && relevant(t, factors[f].dim))
            r.insert(c.X(f, s), factors[f].log_value);
      const double constant = t == Inputs ? inputs_window_log(lay.p) : 0.0;
      mip.add_row(r, -COIN_DBL_MAX, log_capacity(lay.a, ms, i) - constant + kEps);
    }
}

// Adds the z, moving and reused columns and their rows: reuse of each
// tensor through the loop order of the levels above its keeper.
void add_loop_order(Program& mip, Columns& c, const Layout& lay, const ObjectiveWeights& w) {
  const std::vector<Factor>& factors = lay.factors;
  const int L = static_cast<int>(lay.a.levels.size());
  c.z.assign(static_cast<size_t>(L), {-1, -1, -1});
  for (int i = lay.lowest_keeper + 1; i < L; ++i) {
    CoinPackedVector one;
    for (int t = 0; t < kTensors; ++t)  // a stationary tensor's z is fixed at 1 (the row then holds the others at 0)
      if (i > lay.keeper[t])
        one.insert(c.z[static_cast<size_t>(i)][t] = mip.column(0, lay.ms.stationary_at(i) == t ? 1 : 0, 1, true), 1.0);
    mip.add_row(one, -COIN_DBL_MAX, 1.0);
  }
  for (int t = 0; t < kTensors; ++t) {
    std::vector<int>& moving = c.moving[t];
    moving.assign(static_cast<size_t>(L), -1);
    for (int i = lay.keeper[t] + 1; i + 1 < L; ++i) {
      const int mv = moving[static_cast<size_t>(i)] = mip.column(0, 0, 1, true);
      if (i > lay.keeper[t] + 1) {
        CoinPackedVector r;  // moving[i] >= moving[i - 1]
        r.insert(mv, 1.0);
        r.insert(moving[static_cast<size_t>(i - 1)], -1.0);
        mip.add_row(r, 0, COIN_DBL_MAX);
      }
      for (size_t f = 0; f < factors.size(); ++f) {
        if (!relevant(t, factors[f].dim)) continue;
        CoinPackedVector r;  // copies x moving[i] >= x[f][i temporal]
        r.insert(mv, factors[f].copies);
        r.insert(c.X(f, temporal_place(lay.places, i)), -1.0);
        mip.add_row(r, 0, COIN_DBL_MAX);
      }
    }
    for (int i = lay.keeper[t] + 1; i < L; ++i)
      for (size_t f = 0; f < factors.size(); ++f) {
        if (relevant(t, factors[f].dim)) continue;
        const double cap = factors[f].copies;
        const int u = mip.column(-w.traffic * factors[f].log_value, 0, cap, false);
        c.reused[t].push_back({f, u});
        CoinPackedVector le_x, le_z;
        le_x.insert(u, 1.0);
        le_x.insert(c.X(f, temporal_place(lay.places, i)), -1.0);
        mip.add_row(le_x, -COIN_DBL_MAX, 0);
        le_z.insert(u, 1.0);
        le_z.insert(c.z[static_cast<size_t>(i)][t], -cap);
        mip.add_row(le_z, -COIN_DBL_MAX, 0);
        if (i > lay.keeper[t] + 1) {
          CoinPackedVector le_mv;  // reused <= copies x (1 - moving[i - 1])
          le_mv.insert(u, 1.0);
          le_mv.insert(moving[static_cast<size_t>(i - 1)], cap);
          mip.add_row(le_mv, -COIN_DBL_MAX, cap);
        }
      }
  }
}

// Adds the column y, the log of the cycle bound, with y >= log compute
// cycles and y >= log DRAM traffic of each tensor - log bandwidth.
void add_latency(Program& mip, const Columns& c, const Layout& lay, const ObjectiveWeights& w) {
  const std::vector<Factor>& factors = lay.factors;
  const std::vector<Place>& places = lay.places;
  const int y = mip.column(w.latency, -COIN_DBL_MAX, COIN_DBL_MAX, false);
  CoinPackedVector compute;
  compute.insert(y, 1.0);
  for (size_t f = 0; f < factors.size(); ++f)
    for (int s = 0; s < c.places; ++s)
      if (!places[static_cast<size_t>(s)].spatial) compute.insert(c.X(f, s), -factors[f].log_value);
  mip.add_row(compute, 0, COIN_DBL_MAX);
  for (int t = 0; t < kTensors; ++t) {
    const double bw = lay.bandwidth(t);
    if (bw <= 0) continue;
    CoinPackedVector r;
    r.insert(y, 1.0);
    for (size_t f = 0; f < factors.size(); ++f)
      for (int s = 0; s < c.places; ++s)
        if (lay.refetches(t, factors[f].dim, places[static_cast<size_t>(s)])) r.insert(c.X(f, s), -factors[f].log_value);
    for (const auto& [f, u] : c.reused[t]) r.insert(u, factors[f].log_value);
    mip.add_row(r, lay.traffic_constant(t) - std::log(bw), COIN_DBL_MAX);
  }
}

// CBC's optimum of the program: every column's value and the objective.
struct Solution {
  std::vector<double> values;
  double objective = 0;
  bool optimal = true;
};

// Solves the program with CBC; throws when it finds no mapping, or no
// proven optimum without a time limit.
Solution solve(const Program& mip, const Problem& p, const Arch& a, const SolveLimits& limits) {
  const int cols = static_cast<int>(mip.obj.size());
  CoinPackedMatrix rows(false, 0, 0);
  rows.setDimensions(0, cols);
  for (const CoinPackedVector& r : mip.rows) rows.appendRow(r);
  OsiClpSolverInterface solver;
  solver.loadProblem(rows, mip.lo.data(), mip.hi.data(), mip.obj.data(), mip.row_lo.data(), mip.row_hi.data());
  for (int c = 0; c < cols; ++c)
    if (mip.integer[static_cast<size_t>(c)]) solver.setInteger(c);
  solver.messageHandler()->setLogLevel(0);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  if (limits.gap > 0) model.setAllowableGap(limits.gap);
  if (limits.seconds > 0) model.setMaximumSeconds(limits.seconds);
  model.branchAndBound();
  SYLVA_CHECK((limits.seconds > 0 || model.isProvenOptimal()) && model.bestSolution(), "[cosa] CBC found no mapping for '", p.name, "' on '",
              a.name, "': ", model.isProvenInfeasible() ? "infeasible (a buffer too small for any tiling?)"
                                                         : "stopped without a proven optimum");
  const double* sol = model.bestSolution();
  return {std::vector<double>(sol, sol + cols), model.getObjValue(), model.isProvenOptimal()};
}

// The mapping a solution describes: the factors at their places and, where
// z[i][t] is set, t's non-indexing loops innermost at level i.
Mapping decode(const std::vector<double>& sol, const Columns& c, const Layout& lay, const Mapspace& ms) {
  const std::vector<Factor>& factors = lay.factors;
  Mapping m = blank_mapping(lay.a, ms);
  for (size_t f = 0; f < factors.size(); ++f) {
    int placed = 0;
    for (int s = 0; s < c.places; ++s) {
      const auto n = static_cast<int>(std::llround(sol[static_cast<size_t>(c.X(f, s))]));
      const Place& sl = lay.places[static_cast<size_t>(s)];
      auto& target = sl.spatial ? m.levels[static_cast<size_t>(sl.level)].spatial
                                : m.levels[static_cast<size_t>(sl.level)].temporal;
      for (int k = 0; k < n; ++k) target[static_cast<size_t>(factors[f].dim)] *= factors[f].value;
      placed += n;
    }
    SYLVA_ASSERT(placed == factors[f].copies, "[cosa] CBC's solution places ", placed, " of ", factors[f].copies,
                 " copies of a factor");
  }
  for (int i = lay.lowest_keeper + 1; i < static_cast<int>(lay.a.levels.size()); ++i)
    for (int t = 0; t < kTensors; ++t) {
      const int z = c.z[static_cast<size_t>(i)][t];
      if (z >= 0 && sol[static_cast<size_t>(z)] > 0.5)
        m.levels[static_cast<size_t>(i)].temporal_permutation = innermost_first(t);
    }
  apply_stationary(m, ms);  // where the stationary tensor had no z (kept at or above the level): the order alone
  return m;
}
}  // namespace

std::vector<int64_t> prime_factors(int64_t n) {
  SYLVA_CHECK(n >= 1, "[cosa] cannot factor ", n);
  std::vector<int64_t> f;
  for (int64_t q = 2; q * q <= n; ++q)
    while (n % q == 0) {
      f.push_back(q);
      n /= q;
    }
  if (n > 1) f.push_back(n);
  return f;
}

std::string large_primes(const Problem& p, int64_t limit) {
  std::string out;
  for (int d = 0; d < kDims; ++d) {
    const std::vector<int64_t> f = prime_factors(p.bounds[static_cast<size_t>(d)]);
    if (!f.empty() && f.back() > limit)
      out += detail::concat(out.empty() ? "" : " ", kDimNames[static_cast<size_t>(d)], "=", p.bounds[static_cast<size_t>(d)]);
  }
  return out;
}

Problem pad_problem(const Problem& p, int64_t limit) {
  SYLVA_CHECK(limit >= 2, "[cosa] padding needs a prime limit >= 2, got ", limit);
  Problem out = p;
  for (int64_t& b : out.bounds)
    while (b > 1 && prime_factors(b).back() > limit) ++b;
  return out;
}

SolveLimits cpu_limits() { return {0.3, 0.9}; }

Result schedule(const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w,
                const SolveLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  SYLVA_CHECK(ms.keep.size() == a.levels.size(), "[cosa] the mapspace has ", ms.keep.size(), " levels, the arch ",
              a.levels.size());
  SYLVA_CHECK(w.utilization >= 0 && w.compute >= 0 && w.traffic >= 0 && w.latency >= 0 && w.blocks >= 0,
              "[cosa] objective weights must be >= 0");
  const Layout lay(p, a, ms);
  Program mip;
  Columns c;
  add_placements(mip, c, lay, w);
  add_placement_rows(mip, c, lay, ms);
  add_loop_order(mip, c, lay, w);
  if (w.latency > 0) add_latency(mip, c, lay, w);
  SYLVA_CHECK(limits.gap >= 0 && limits.seconds >= 0, "[cosa] solve limits must be >= 0");
  const Solution sol = solve(mip, p, a, limits);

  Result out;
  out.variables = static_cast<int>(mip.obj.size());
  out.constraints = static_cast<int>(mip.row_lo.size());
  out.objective = sol.objective;
  out.optimal = sol.optimal;
  out.mapping = decode(sol.values, c, lay, ms);
  choose_orders(out.mapping, p, a, lay.lowest_keeper);
  out.evaluation = evaluate(out.mapping, p, a);
  out.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

ObjectiveWeights cpu_objective() {
  ObjectiveWeights w;
  w.blocks = 1.0;
  return w;
}

namespace {
// mip_objective's loop-order choices, per level from lay.lowest_keeper + 1
// (`first`) up: -1 or a tensor whose keeper is below the level. Whether
// `choice` holds the mapspace's stationary tensor wherever it names one
// the MIP has a column for.
bool honours_stationary(const std::vector<int>& choice, int first, const Layout& lay) {
  for (size_t k = 0; k < choice.size(); ++k) {
    const int level = first + static_cast<int>(k), st = lay.ms.stationary_at(level);
    if (st >= 0 && level > lay.keeper[st] && choice[k] != st) return false;
  }
  return true;
}

// The next choice (an odometer over {none} + the tensors whose keeper is
// below each level); false after the last.
bool next_choice(std::vector<int>& choice, int first, const Layout& lay) {
  for (size_t k = 0; k < choice.size(); ++k) {
    int& c = choice[k];
    do ++c;
    while (c < kTensors && first + static_cast<int>(k) <= lay.keeper[c]);
    if (c < kTensors) return true;
    c = -1;
  }
  return false;
}
}  // namespace

double mip_objective(const Mapping& m, const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w,
                     bool* feasible) {
  SYLVA_CHECK(m.levels.size() == a.levels.size(), "[cosa] the mapping has ", m.levels.size(), " levels, the arch ",
              a.levels.size());
  for (int j = 0; j < kDims; ++j) {
    int64_t prod = 1;
    for (const LevelMapping& l : m.levels) prod *= l.temporal[static_cast<size_t>(j)] * l.spatial[static_cast<size_t>(j)];
    SYLVA_CHECK(prod == p.bounds[static_cast<size_t>(j)], "[cosa] the factors of ", kDimNames[static_cast<size_t>(j)],
                " multiply to ", prod, ", not ", p.bounds[static_cast<size_t>(j)]);
  }
  const Layout lay(p, a, ms);
  const int L = static_cast<int>(a.levels.size());
  const auto lg = [&](int i, bool spatial, int j) {
    const LevelMapping& l = m.levels[static_cast<size_t>(i)];
    return std::log(static_cast<double>((spatial ? l.spatial : l.temporal)[static_cast<size_t>(j)]));
  };
  double base = 0, compute = 0;
  std::array<double, kTensors> traffic{};
  bool ok = true;
  for (int t = 0; t < kTensors; ++t) traffic[t] = lay.traffic_constant(t);
  for (int i = 0; i < L; ++i) {
    double spatial = 0;
    for (int j = 0; j < kDims; ++j) {
      const double lt = lg(i, false, j), ls = lg(i, true, j);
      base += (w.compute + (reruns_block(ms, i, j) ? w.blocks : 0.0)) * lt - w.utilization * ls;
      compute += lt;
      spatial += ls;
      ok = ok && (ls == 0 || ms.spatial_allowed(i, j));
      for (int t = 0; t < kTensors; ++t)
        traffic[t] += lt * lay.refetches(t, j, {i, false}) + ls * lay.refetches(t, j, {i, true});
    }
    ok = ok && spatial <= std::log(static_cast<double>(a.fanout(i))) + kEps;
    if (i + 1 == L) continue;
    for (int t = 0; t < kTensors; ++t) {
      if (!ms.keep[static_cast<size_t>(i)][t]) continue;
      double tile = t == Inputs ? inputs_window_log(p) : 0.0;
      for (int k = 0; k <= i; ++k)
        for (int j = 0; j < kDims; ++j)
          if (relevant(t, j)) tile += lg(k, false, j) + lg(k, true, j);
      ok = ok && tile <= log_capacity(a, ms, i) + kEps;
    }
  }
  if (feasible) *feasible = ok;
  // The MIP picks, per level above the keepers, at most one tensor whose
  // non-indexing loops go innermost there (the mapspace's stationary one
  // where it names one); its optimum is the best choice.
  const int first = lay.lowest_keeper + 1, levels = L - first;
  std::vector<int> choice(static_cast<size_t>(levels), -1);
  double best = INFINITY;
  for (;;) {
    std::array<double, kTensors> tr = traffic;
    for (int t = 0; t < kTensors; ++t) {
      bool moving = false;
      for (int i = lay.keeper[t] + 1; i < L; ++i) {
        if (!moving && choice[static_cast<size_t>(i - first)] == t)
          for (int j = 0; j < kDims; ++j)
            if (!relevant(t, j)) tr[t] -= lg(i, false, j);
        const LevelMapping& l = m.levels[static_cast<size_t>(i)];
        for (int j = 0; j < kDims; ++j) moving = moving || (relevant(t, j) && l.temporal[static_cast<size_t>(j)] > 1);
      }
    }
    double o = base + w.traffic * (tr[0] + tr[1] + tr[2] - lay.traffic_constant(Inputs));
    if (w.latency > 0) {
      double y = compute;
      for (int t = 0; t < kTensors; ++t)
        if (lay.bandwidth(t) > 0) y = std::max(y, tr[t] - std::log(lay.bandwidth(t)));
      o += w.latency * y;
    }
    if (honours_stationary(choice, first, lay)) best = std::min(best, o);
    if (!next_choice(choice, first, lay)) break;
  }
  return best;
}

}  // namespace sylva::cosa
