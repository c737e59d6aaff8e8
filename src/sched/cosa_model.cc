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

}  // namespace

bool relevant(int tensor, int dim) {
  switch (tensor) {
    case Weights: return dim == R || dim == S || dim == C || dim == K;
    case Outputs: return dim == P || dim == Q || dim == K || dim == N;
    default: return dim != K;
  }
}

Evaluation evaluate(const Mapping& m, const Problem& p, const Arch& a) {
  check_mapping(m, p, a);
  Evaluation e;
  const size_t L = a.levels.size();
  e.tile.assign(L, {0, 0, 0});
  const auto fail = [&](auto&&... msg) {
    if (e.valid) e.why = detail::concat(msg...);
    e.valid = false;
  };
  SYLVA_CHECK(a.levels.back().dram, "[cosa] architecture '", a.name, "': the outermost level must be DRAM");
  // Tiles: the extents of every loop at a level and below it (its spatial loops included).
  std::array<int64_t, kDims> ext{1, 1, 1, 1, 1, 1, 1};
  for (size_t i = 0; i < L; ++i) {
    int64_t used = 0;
    for (int d = 0; d < kDims; ++d) ext[d] *= m.levels[i].temporal[d] * m.levels[i].spatial[d];
    for (int t = 0; t < kTensors; ++t)
      if (m.levels[i].keep[t]) used += e.tile[i][t] = footprint(t, ext, p);
    if (!a.levels[i].dram && used > a.levels[i].entries)
      fail("level ", a.levels[i].name, " holds tiles of ", used, " words but has ", a.levels[i].entries, " entries");
  }
  // DRAM traffic: the keeper just inside DRAM refetches its tile once per
  // iteration of the temporal loops above it, except the innermost loops that
  // do not index the tensor (the tile stays); one copy per instance that needs
  // different data (spatial loops above it that index the tensor).
  for (int t = 0; t < kTensors; ++t) {
    int c = -1;
    for (int i = static_cast<int>(L) - 2; i >= 0 && c < 0; --i)
      if (m.levels[static_cast<size_t>(i)].keep[t]) c = i;
    if (c < 0) {
      fail("no level inside DRAM keeps ", tensor_name(t));
      continue;
    }
    int64_t refetch = 1, distinct = 1;
    bool moving = false;
    for (size_t i = static_cast<size_t>(c) + 1; i < L; ++i) {
      for (char name : m.levels[i].temporal_permutation) {
        const int d = static_cast<int>(std::find(kDimNames.begin(), kDimNames.end(), name) - kDimNames.begin());
        const int64_t f = m.levels[i].temporal[d];
        if (f == 1) continue;
        moving = moving || relevant(t, d);
        if (moving) refetch *= f;
      }
      for (int d = 0; d < kDims; ++d)
        if (relevant(t, d)) distinct *= m.levels[i].spatial[d];
    }
    const int64_t words = e.tile[static_cast<size_t>(c)][t] * refetch * distinct;
    if (t == Outputs) {
      e.dram_updates = words;
      e.dram_reads[t] = std::max<int64_t>(0, words - p.bounds[P] * p.bounds[Q] * p.bounds[K] * p.bounds[N]);
    } else {
      e.dram_reads[t] = words;
    }
  }
  e.compute_cycles = 1;
  for (const LevelMapping& l : m.levels)
    for (int64_t f : l.temporal) e.compute_cycles *= f;
  const Level& dram = a.levels.back();
  const int64_t reads = e.dram_reads[Weights] + e.dram_reads[Inputs] + e.dram_reads[Outputs];
  e.cycles = std::max({e.compute_cycles, ceil_div(static_cast<double>(reads), dram.read_bandwidth),
                       ceil_div(static_cast<double>(e.dram_updates), dram.write_bandwidth)});
  e.utilization = static_cast<double>(p.macs()) / (static_cast<double>(e.cycles) * static_cast<double>(a.mac_instances));
  return e;
}

}  // namespace sylva::cosa
