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

struct Factor {
  int dim;
  double log_value;
};

// A place for a factor: a level, temporal or spatial.
struct Slot {
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

// The objective coefficient of one unit of log-factor of dimension j placed at `s`.
double coefficient(int j, const Slot& s, const std::array<int, kTensors>& keeper, const ObjectiveWeights& w) {
  double c = s.spatial ? -w.utilization : w.compute;
  for (int t = 0; t < kTensors; ++t) {
    const bool inside = s.level <= keeper[t];
    if ((inside && relevant(t, j)) || (!inside && (!s.spatial || relevant(t, j)))) c += w.traffic;
  }
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

std::vector<Slot> slots_of(const Arch& a) {
  std::vector<Slot> s;
  for (int i = 0; i < static_cast<int>(a.levels.size()); ++i) {
    s.push_back({i, false});
    if (a.fanout(i) > 1) s.push_back({i, true});
  }
  return s;
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

Result schedule(const Problem& p, const Arch& a, const Mapspace& ms, const ObjectiveWeights& w) {
  const auto t0 = std::chrono::steady_clock::now();
  SYLVA_CHECK(ms.keep.size() == a.levels.size(), "[cosa] the mapspace has ", ms.keep.size(), " levels, the arch ",
              a.levels.size());
  SYLVA_CHECK(w.utilization >= 0 && w.compute >= 0 && w.traffic >= 0, "[cosa] objective weights must be >= 0");
  const std::array<int, kTensors> keeper = keepers(a, ms);
  // Identical prime factors of one dimension are interchangeable: one
  // integer variable per (factor group, place) counts how many copies sit
  // there (the binaries of the paper, without their symmetric solutions).
  std::vector<Factor> factors;  // one per group
  std::vector<int> copies;
  for (int j = 0; j < kDims; ++j)
    for (int64_t q : prime_factors(p.bounds[static_cast<size_t>(j)])) {
      const double lq = std::log(static_cast<double>(q));
      if (!factors.empty() && factors.back().dim == j && factors.back().log_value == lq) {
        ++copies.back();
      } else {
        factors.push_back({j, lq});
        copies.push_back(1);
      }
    }
  const std::vector<Slot> slots = slots_of(a);
  const int S = static_cast<int>(slots.size());
  const int cols = static_cast<int>(factors.size()) * S;
  const auto var = [&](size_t f, int s) { return static_cast<int>(f) * S + s; };

  std::vector<double> obj(static_cast<size_t>(cols)), lo(static_cast<size_t>(cols), 0.0), hi(static_cast<size_t>(cols));
  for (size_t f = 0; f < factors.size(); ++f)
    for (int s = 0; s < S; ++s) {
      obj[static_cast<size_t>(var(f, s))] =
          factors[f].log_value * coefficient(factors[f].dim, slots[static_cast<size_t>(s)], keeper, w);
      hi[static_cast<size_t>(var(f, s))] = copies[f];
    }

  CoinPackedMatrix rows(false, 0, 0);
  rows.setDimensions(0, cols);
  std::vector<double> row_lo, row_hi;
  const auto add_row = [&](const CoinPackedVector& r, double l, double h) {
    rows.appendRow(r);
    row_lo.push_back(l);
    row_hi.push_back(h);
  };
  // Each factor placed exactly once.
  for (size_t f = 0; f < factors.size(); ++f) {
    CoinPackedVector r;
    for (int s = 0; s < S; ++s) r.insert(var(f, s), 1.0);
    add_row(r, copies[f], copies[f]);
  }
  // Spatial factors of a level within its fan-out.
  for (int s = 0; s < S; ++s) {
    if (!slots[static_cast<size_t>(s)].spatial) continue;
    CoinPackedVector r;
    for (size_t f = 0; f < factors.size(); ++f) r.insert(var(f, s), factors[f].log_value);
    add_row(r, -COIN_DBL_MAX, std::log(static_cast<double>(a.fanout(slots[static_cast<size_t>(s)].level))) + kEps);
  }
  // Each kept tensor's tile within its share of the level.
  for (int i = 0; i + 1 < static_cast<int>(a.levels.size()); ++i)
    for (int t = 0; t < kTensors; ++t) {
      if (!ms.keep[static_cast<size_t>(i)][t]) continue;
      CoinPackedVector r;
      for (size_t f = 0; f < factors.size(); ++f)
        for (int s = 0; s < S; ++s)
          if (slots[static_cast<size_t>(s)].level <= i && relevant(t, factors[f].dim))
            r.insert(var(f, s), factors[f].log_value);
      const double constant = t == Inputs ? inputs_window_log(p) : 0.0;
      add_row(r, -COIN_DBL_MAX, log_capacity(a, ms, i) - constant + kEps);
    }

  OsiClpSolverInterface solver;
  solver.loadProblem(rows, lo.data(), hi.data(), obj.data(), row_lo.data(), row_hi.data());
  for (int c = 0; c < cols; ++c) solver.setInteger(c);
  solver.messageHandler()->setLogLevel(0);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.branchAndBound();
  SYLVA_CHECK(model.isProvenOptimal() && model.bestSolution(), "[cosa] CBC found no mapping for '", p.name, "' on '",
              a.name, "': ", model.isProvenInfeasible() ? "infeasible (a buffer too small for any tiling?)"
                                                         : "stopped without a proven optimum");
  const double* x = model.bestSolution();

  Result out;
  out.variables = cols;
  out.constraints = static_cast<int>(row_lo.size());
  out.objective = model.getObjValue();
  Mapping& m = out.mapping = blank_mapping(a, ms);
  for (size_t f = 0; f < factors.size(); ++f) {
    int placed = 0;
    for (int s = 0; s < S; ++s) {
      const auto n = static_cast<int>(std::llround(x[var(f, s)]));
      const Slot& sl = slots[static_cast<size_t>(s)];
      auto& target = sl.spatial ? m.levels[static_cast<size_t>(sl.level)].spatial
                                : m.levels[static_cast<size_t>(sl.level)].temporal;
      for (int k = 0; k < n; ++k)
        target[static_cast<size_t>(factors[f].dim)] *= static_cast<int64_t>(std::llround(std::exp(factors[f].log_value)));
      placed += n;
    }
    SYLVA_ASSERT(placed == copies[f], "[cosa] CBC's solution places ", placed, " of ", copies[f], " copies of a factor");
  }
  choose_orders(m, p, a, *std::min_element(keeper.begin(), keeper.end()));
  out.evaluation = evaluate(m, p, a);
  out.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

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
  const std::array<int, kTensors> keeper = keepers(a, ms);
  double objective = 0;
  bool ok = true;
  for (int i = 0; i < static_cast<int>(a.levels.size()); ++i) {
    const LevelMapping& l = m.levels[static_cast<size_t>(i)];
    double spatial = 0;
    for (int j = 0; j < kDims; ++j) {
      const double lt = std::log(static_cast<double>(l.temporal[static_cast<size_t>(j)]));
      const double ls = std::log(static_cast<double>(l.spatial[static_cast<size_t>(j)]));
      objective += lt * coefficient(j, {i, false}, keeper, w) + ls * coefficient(j, {i, true}, keeper, w);
      spatial += ls;
    }
    ok = ok && spatial <= std::log(static_cast<double>(a.fanout(i))) + kEps;
    if (i + 1 == static_cast<int>(a.levels.size())) continue;
    for (int t = 0; t < kTensors; ++t) {
      if (!ms.keep[static_cast<size_t>(i)][t]) continue;
      double tile = t == Inputs ? inputs_window_log(p) : 0.0;
      for (int k = 0; k <= i; ++k)
        for (int j = 0; j < kDims; ++j)
          if (relevant(t, j))
            tile += std::log(static_cast<double>(m.levels[static_cast<size_t>(k)].temporal[static_cast<size_t>(j)] *
                                                 m.levels[static_cast<size_t>(k)].spatial[static_cast<size_t>(j)]));
      ok = ok && tile <= log_capacity(a, ms, i) + kEps;
    }
  }
  if (feasible) *feasible = ok;
  return objective;
}

}  // namespace sylva::cosa
