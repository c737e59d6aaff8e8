#include "sylva/sched/cosa_model.h"

#include <algorithm>

#include "sylva/core/error.h"

namespace sylva::cosa {

namespace {

int64_t ceil_div(double words, double per_cycle) {
  if (per_cycle <= 0 || words <= 0) return 0;
  const double c = words / per_cycle;
  const auto whole = static_cast<int64_t>(c);
  return static_cast<double>(whole) == c ? whole : whole + 1;
}

// Words of tensor t touched by loop extents `ext` (the sliding window for Inputs).
int64_t footprint(int t, const std::array<int64_t, kDims>& ext, const Problem& p) {
  if (t == Weights) return ext[R] * ext[S] * ext[C] * ext[K];
  if (t == Outputs) return ext[P] * ext[Q] * ext[K] * ext[N];
  const int64_t w = p.w_stride * (ext[P] - 1) + p.w_dilation * (ext[R] - 1) + 1;
  const int64_t h = p.h_stride * (ext[Q] - 1) + p.h_dilation * (ext[S] - 1) + 1;
  return ext[C] * ext[N] * w * h;
}

// Marks e invalid, keeping the first reason given.
template <typename... Msg>
void fail(Evaluation& e, const Msg&... msg) {
  if (e.valid) e.why = detail::concat(msg...);
  e.valid = false;
}

// Per level, the extents of every loop at it and below it (its spatial loops included).
std::vector<std::array<int64_t, kDims>> extents(const Mapping& m) {
  std::vector<std::array<int64_t, kDims>> extent(m.levels.size());
  std::array<int64_t, kDims> x{1, 1, 1, 1, 1, 1, 1};
  for (size_t i = 0; i < m.levels.size(); ++i) {
    for (int d = 0; d < kDims; ++d) x[d] *= m.levels[i].temporal[d] * m.levels[i].spatial[d];
    extent[i] = x;
  }
  return extent;
}

// Fills e.tile from the extents and marks e invalid where a level's tiles overflow it.
void check_tiles(Evaluation& e, const Mapping& m, const Problem& p, const Arch& a,
                 const std::vector<std::array<int64_t, kDims>>& extent) {
  for (size_t i = 0; i < a.levels.size(); ++i) {
    int64_t used = 0;
    for (int t = 0; t < kTensors; ++t)
      if (m.levels[i].keep[t]) used += e.tile[i][t] = footprint(t, extent[i], p);
    if (!a.levels[i].dram && used > a.levels[i].entries)
      fail(e, "level ", a.levels[i].name, " holds tiles of ", used, " words but has ", a.levels[i].entries, " entries");
  }
}

// The product of the spatial factors of levels lo+1..hi on the loops that
// index t (indexing) or that do not.
int64_t spatial(const Mapping& m, int lo, int hi, int t, bool indexing) {
  int64_t f = 1;
  for (int j = lo + 1; j <= hi; ++j)
    for (int d = 0; d < kDims; ++d)
      if (relevant(t, d) == indexing) f *= m.levels[static_cast<size_t>(j)].spatial[static_cast<size_t>(d)];
  return f;
}

// Words one instance of keeper i fetches for t over the run: its tile once
// per iteration of the moving loops above it. When the innermost moving
// loop slides an Inputs window (P, Q, R or S), each step after the first
// fetches only the new columns or rows.
int64_t fetched(const Mapping& m, const Problem& p, const std::vector<std::array<int64_t, kDims>>& extent, int i,
                int t) {
  int64_t r = 1, first = 0;
  int first_dim = -1;
  bool skipped = false;  // an irrelevant loop sits inside the first moving one
  for (size_t j = static_cast<size_t>(i) + 1; j < m.levels.size(); ++j)
    for (char name : m.levels[j].temporal_permutation) {
      const int d = static_cast<int>(std::find(kDimNames.begin(), kDimNames.end(), name) - kDimNames.begin());
      const int64_t f = m.levels[j].temporal[static_cast<size_t>(d)];
      if (f == 1) continue;
      if (first_dim < 0 && !relevant(t, d)) {
        skipped = true;
        continue;
      }
      if (first_dim < 0) {
        first_dim = d;
        first = f;
      } else {
        r *= f;
      }
    }
  const std::array<int64_t, kDims>& x = extent[static_cast<size_t>(i)];
  const int64_t tile = footprint(t, x, p);
  if (first_dim < 0) return tile;
  int64_t step = tile;
  if (t == Inputs && first_dim != C && first_dim != N && !skipped) {
    const bool along_w = first_dim == P || first_dim == R;
    const int64_t w = p.w_stride * (x[P] - 1) + p.w_dilation * (x[R] - 1) + 1;
    const int64_t h = p.h_stride * (x[Q] - 1) + p.h_dilation * (x[S] - 1) + 1;
    const int64_t shift = first_dim == P ? p.w_stride * x[P]
                          : first_dim == R ? p.w_dilation * x[R]
                          : first_dim == Q ? p.h_stride * x[Q]
                                           : p.h_dilation * x[S];
    step = x[C] * x[N] * (along_w ? std::min(w, shift) * h : w * std::min(h, shift));
  }
  return (tile + (first - 1) * step) * r;
}

// Fills e.accesses. A keeper's tile is refilled once per iteration of the
// temporal loops above it, except the innermost ones that do not index the
// tensor (the tile stays); the spatial loops between a keeper and the next
// one out that index the tensor ask it for distinct data (the rest is
// multicast, or for Outputs reduced on the way).
void count_accesses(Evaluation& e, const Mapping& m, const Problem& p,
                    const std::vector<std::array<int64_t, kDims>>& extent) {
  const int last = static_cast<int>(m.levels.size()) - 1;
  e.accesses.assign(m.levels.size(), {});
  const int64_t macs = p.macs();
  const int64_t outputs = p.bounds[P] * p.bounds[Q] * p.bounds[K] * p.bounds[N];
  for (int t = 0; t < kTensors; ++t) {
    int inner = -1;  // the next keeper inside
    for (int i = 0; i <= last; ++i) {
      if (!m.levels[static_cast<size_t>(i)].keep[t] && i != last) continue;
      if (i == last && inner < 0) {
        fail(e, "no level inside DRAM keeps ", tensor_name(t));
        break;
      }
      Accesses& acc = e.accesses[static_cast<size_t>(i)][t];
      acc.instances = spatial(m, i, last, t, true) * spatial(m, i, last, t, false);
      // Words crossing from inside, per instance of this level.
      const int64_t from_inside =
          inner >= 0 ? fetched(m, p, extent, inner, t) * spatial(m, inner, i, t, true)
                     : macs / acc.instances / spatial(m, -1, i, t, false);
      const int64_t refilled = i == last ? 0 : fetched(m, p, extent, i, t);
      if (t == Outputs) {
        const int64_t owned = outputs / spatial(m, i, last, t, true);  // distinct partial sums this instance holds
        acc.updates = from_inside;
        acc.reads = std::max<int64_t>(0, from_inside - owned);
        acc.fills = i == last ? 0 : std::max<int64_t>(0, refilled - owned);
      } else {
        acc.reads = from_inside;
        acc.fills = refilled;
      }
      inner = i;
    }
  }
}

// MACs x MAC energy plus, per level and tensor, words x clusters touched x
// vector access energy / block size.
double energy_pj(const Evaluation& e, const Problem& p, const Arch& a) {
  double pj = static_cast<double>(p.macs()) * a.mac_energy;
  for (size_t i = 0; i < a.levels.size(); ++i) {
    const Level& l = a.levels[i];
    for (const Accesses& acc : e.accesses[i]) {
      const int64_t words = acc.reads + acc.fills + acc.updates;
      if (words == 0) continue;
      const double clusters = static_cast<double>(std::min(acc.instances, std::max<int64_t>(1, l.instances / l.cluster_size)));
      pj += static_cast<double>(words) * clusters * l.vector_access_energy / static_cast<double>(l.block_size);
    }
  }
  return pj;
}

}  // namespace

bool relevant(int tensor, int dim) {
  switch (tensor) {
    case Weights: return dim == R || dim == S || dim == C || dim == K;
    case Outputs: return dim == P || dim == Q || dim == K || dim == N;
    default: return dim != K;
  }
}

void apply_stationary(Mapping& m, const Mapspace& ms) {
  for (size_t i = 0; i < m.levels.size(); ++i) {
    const int t = ms.stationary_at(static_cast<int>(i));
    if (t < 0) continue;
    std::string& order = m.levels[i].temporal_permutation;
    std::stable_partition(order.begin(), order.end(), [t](char d) {
      return !relevant(t, static_cast<int>(std::find(kDimNames.begin(), kDimNames.end(), d) - kDimNames.begin()));
    });
  }
}

Evaluation evaluate(const Mapping& m, const Problem& p, const Arch& a) {
  check_mapping(m, p, a);
  Evaluation e;
  const size_t L = a.levels.size();
  e.tile.assign(L, {0, 0, 0});
  SYLVA_CHECK(a.levels.back().dram, "[cosa] architecture '", a.name, "': the outermost level must be DRAM");
  const std::vector<std::array<int64_t, kDims>> extent = extents(m);
  check_tiles(e, m, p, a, extent);
  count_accesses(e, m, p, extent);
  for (int t = 0; t < kTensors; ++t) e.dram_reads[t] = e.accesses[L - 1][t].reads;
  e.dram_updates = e.accesses[L - 1][Outputs].updates;
  e.energy_pj = energy_pj(e, p, a);
  e.compute_cycles = 1;
  for (const LevelMapping& l : m.levels)
    for (int64_t f : l.temporal) e.compute_cycles *= f;
  e.cycles = e.compute_cycles;
  for (size_t i = 0; i < L; ++i) {  // each level under its bandwidth (0: unlimited)
    const Level& l = a.levels[i];
    int64_t reads = 0, writes = 0;
    for (const Accesses& acc : e.accesses[i]) {
      reads += acc.reads;
      writes += acc.fills + acc.updates;
    }
    e.cycles = std::max({e.cycles, ceil_div(static_cast<double>(reads), l.read_bandwidth),
                         ceil_div(static_cast<double>(writes), l.write_bandwidth)});
  }
  e.utilization = static_cast<double>(p.macs()) / (static_cast<double>(e.cycles) * static_cast<double>(a.mac_instances));
  return e;
}

}  // namespace sylva::cosa
