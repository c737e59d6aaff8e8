#include "sylva/sched/ios.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sylva/core/error.h"

namespace sylva::ios {
namespace {

OpSet bit(int v) { return OpSet{1} << v; }

template <class F>
void for_each_op(OpSet s, F f) {
  while (s) {
    f(std::countr_zero(s));
    s &= s - 1;
  }
}

// A chain decomposition: each chain is a path v1 -> v2 -> ... of direct edges.
std::vector<std::vector<int>> chains_of(const OpDag& dag) {
  std::vector<std::vector<int>> chains;
  OpSet used = 0;
  for (int v : dag.topo_order()) {
    if (used & bit(v)) continue;
    std::vector<int> c{v};
    used |= bit(v);
    for (int u = v;;) {
      const OpSet next = dag.succs(u) & ~used;
      if (!next) break;
      u = std::countr_zero(next);
      c.push_back(u);
      used |= bit(u);
    }
    chains.push_back(std::move(c));
  }
  return chains;
}

// One way to run a set of operators: its cost, its last stage, and the
// rank of the way the rest runs before it.
struct Entry {
  double cost;
  std::shared_ptr<const Stage> stage;
  int rest;
};

// The DP over the sets of operators still to schedule, from the end: the
// `keep` cheapest ways to run a set, each a last stage and which of the
// rest's ways comes before it. With keep = 1 this is IOS's DP; more gives
// the runner-up plans that the measured final choice (fastest()) tries.
class Solver {
 public:
  Solver(const OpDag& dag, StageCostModel& cost, const Options& o, int keep)
      : dag_(dag), cost_(cost), o_(o), keep_(keep) {}

  const std::vector<Entry>& solve(OpSet s) {
    if (auto it = memo_.find(s); it != memo_.end()) return it->second;
    std::vector<Entry> best;
    if (!s) {
      best.push_back({0.0, {}, 0});
      return memo_.emplace(s, std::move(best)).first->second;
    }
    for (Stage& st : candidates(s)) {
      const double own = stage_cost(st);
      const std::vector<Entry>& rest = solve(s & ~st.ops());
      std::shared_ptr<const Stage> stage;  // made once this stage is kept
      for (size_t j = 0; j < rest.size(); ++j) {
        const double c = own + rest[j].cost;
        if (static_cast<int>(best.size()) == keep_ && c >= best.back().cost) break;  // rest is sorted
        if (!stage) stage = std::make_shared<const Stage>(std::move(st));
        const auto at = std::upper_bound(best.begin(), best.end(), c, [](double x, const Entry& e) { return x < e.cost; });
        best.insert(at, {c, stage, static_cast<int>(j)});
        if (static_cast<int>(best.size()) > keep_) best.pop_back();
      }
    }
    SYLVA_CHECK(!best.empty(), "[ios] no stage fits the pruning (r=", o_.r, ", s=", o_.s, ")");
    return memo_.emplace(s, std::move(best)).first->second;
  }

  std::vector<StagePlan> plans(OpSet all) {
    const std::vector<Entry> top = solve(all);
    std::vector<StagePlan> out;
    for (size_t k = 0; k < top.size(); ++k) {
      StagePlan p;
      p.cost = top[k].cost;
      int rank = static_cast<int>(k);
      for (OpSet s = all; s;) {
        const Entry& e = memo_.at(s)[static_cast<size_t>(rank)];
        p.stages.push_back(*e.stage);
        s &= ~e.stage->ops();
        rank = e.rest;
      }
      std::reverse(p.stages.begin(), p.stages.end());  // chosen from the end
      p.states = static_cast<int64_t>(memo_.size()) - 1;  // the empty set is no state
      p.stages_costed = costed_;
      out.push_back(std::move(p));
    }
    return out;
  }

  double stage_cost(const Stage& st) {
    ++costed_;
    return cost_.latency(dag_, st);
  }

 private:
  std::vector<Stage> candidates(OpSet s) {
    std::vector<Stage> out;
    const bool parallel = o_.variant == Variant::parallel || o_.variant == Variant::both;
    const bool merge = o_.variant == Variant::merge || o_.variant == Variant::both;
    OpSet sinks = 0;  // operators of s with no successor left in s
    for_each_op(s, [&](int v) {
      if (!(dag_.succs(v) & s)) sinks |= bit(v);
    });
    if (!parallel) {
      for_each_op(sinks, [&](int v) { out.push_back({Stage::Kind::concurrent, {bit(v)}}); });
    } else {
      for (OpSet e : endings(dag_, s, o_.r)) {
        std::vector<OpSet> groups = components(dag_, e);
        if (o_.s > 0 && static_cast<int>(groups.size()) > o_.s) continue;
        if (o_.r > 0 && std::any_of(groups.begin(), groups.end(),
                                    [&](OpSet g) { return std::popcount(g) > o_.r; }))
          continue;
        out.push_back({Stage::Kind::concurrent, std::move(groups)});
      }
    }
    if (merge && std::popcount(sinks) >= 2) {
      // Every subset of two or more sinks that passes the merge check.
      for (OpSet sub = sinks; sub; sub = (sub - 1) & sinks)
        if (std::popcount(sub) >= 2 && cost_.mergeable(dag_, sub)) out.push_back({Stage::Kind::merged, {sub}});
    }
    return out;
  }

  const OpDag& dag_;
  StageCostModel& cost_;
  Options o_;
  int keep_;
  std::unordered_map<OpSet, std::vector<Entry>> memo_;
  int64_t costed_ = 0;
};

}  // namespace

OpDag::OpDag(int n, const std::vector<std::pair<int, int>>& edges) : n_(n) {
  SYLVA_CHECK(n >= 0 && n <= 64, "[ios] a block has at most 64 operators, got ", n, " (split it with split_blocks)");
  preds_.assign(static_cast<size_t>(n), 0);
  succs_.assign(static_cast<size_t>(n), 0);
  for (const auto& [a, b] : edges) {
    SYLVA_CHECK(a >= 0 && a < n && b >= 0 && b < n, "[ios] edge (", a, ", ", b, ") names an operator outside [0, ",
                n, ")");
    SYLVA_CHECK(a != b, "[ios] operator ", a, " reads itself");
    succs_[static_cast<size_t>(a)] |= bit(b);
    preds_[static_cast<size_t>(b)] |= bit(a);
  }
  // Kahn's algorithm, smallest id first; what is left over lies on a cycle.
  OpSet done = 0;
  while (static_cast<int>(topo_.size()) < n) {
    int next = -1;
    for (int v = 0; v < n && next < 0; ++v)
      if (!(done & bit(v)) && (preds_[static_cast<size_t>(v)] & ~done) == 0) next = v;
    SYLVA_CHECK(next >= 0, "[ios] the operator graph has a cycle through operator ",
                std::countr_zero(all() & ~done));
    topo_.push_back(next);
    done |= bit(next);
  }
  desc_.assign(static_cast<size_t>(n), 0);
  for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
    OpSet d = succs_[static_cast<size_t>(*it)];
    for_each_op(succs_[static_cast<size_t>(*it)], [&](int u) { d |= desc_[static_cast<size_t>(u)]; });
    desc_[static_cast<size_t>(*it)] = d;
  }
}

OpSet Stage::ops() const {
  OpSet s = 0;
  for (OpSet g : groups) s |= g;
  return s;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::sequential: return "sequential";
    case Variant::greedy: return "greedy";
    case Variant::merge: return "ios-merge";
    case Variant::parallel: return "ios-parallel";
    case Variant::both: return "ios-both";
  }
  return "?";
}

std::vector<OpSet> endings(const OpDag& dag, OpSet remaining, int max_group) {
  // Each chain meets `remaining` in a prefix (remaining is closed under
  // predecessors); an ending takes a suffix of that prefix from each chain.
  // Taking the suffix from operator h adds h's group: h and its
  // descendants still to schedule; overlapping groups unite in the union.
  std::vector<std::vector<int>> prefixes;
  for (const std::vector<int>& c : chains_of(dag)) {
    std::vector<int> p;
    for (int v : c) {
      if (!(remaining & bit(v))) break;
      p.push_back(v);
    }
    if (!p.empty()) prefixes.push_back(std::move(p));
  }
  const auto too_big = [&](OpSet e) {
    if (max_group <= 0) return false;
    for (OpSet g : components(dag, e))
      if (std::popcount(g) > max_group) return true;
    return false;
  };
  // Depth-first over the chains' cuts. Different cuts often give the same
  // union, so each (chain, union so far) is expanded once; and a union with
  // a group over max_group is dropped, since adding operators only grows
  // groups.
  std::set<OpSet> found;
  std::vector<std::unordered_set<OpSet>> seen(prefixes.size());
  const std::function<void(size_t, OpSet)> cut = [&](size_t k, OpSet e) {
    if (k == prefixes.size()) {
      if (e) found.insert(e);
      return;
    }
    if (!seen[k].insert(e).second) return;
    cut(k + 1, e);
    const std::vector<int>& p = prefixes[k];
    for (size_t j = p.size(); j-- > 0;) {
      const OpSet next = e | bit(p[j]) | (dag.descendants(p[j]) & remaining);
      if (too_big(next)) break;  // longer suffixes only add operators
      cut(k + 1, next);
    }
  };
  cut(0, 0);
  return {found.begin(), found.end()};
}

std::vector<OpSet> components(const OpDag& dag, OpSet ops) {
  std::vector<OpSet> out;
  for (OpSet left = ops; left;) {
    OpSet comp = left & (~left + 1), frontier = comp;
    while (frontier) {
      OpSet next = 0;
      for_each_op(frontier, [&](int v) { next |= (dag.preds(v) | dag.succs(v)) & ops; });
      frontier = next & ~comp;
      comp |= next;
    }
    out.push_back(comp);
    left &= ~comp;
  }
  return out;
}

std::vector<StagePlan> schedule_best(const OpDag& dag, StageCostModel& cost, const Options& options, int k) {
  SYLVA_CHECK(options.r >= 0 && options.s >= 0, "[ios] pruning r and s must be >= 0 (0: no limit), got r=",
              options.r, " s=", options.s);
  SYLVA_CHECK(k >= 1, "[ios] asked for ", k, " plans; at least 1");
  if (options.variant == Variant::greedy) {
    // Wavefront: each stage runs every ready operator, each in its own group.
    StagePlan p;
    for (OpSet done = 0; done != dag.all();) {
      Stage st;
      for (int v : dag.topo_order())
        if (!(done & bit(v)) && (dag.preds(v) & ~done) == 0) st.groups.push_back(bit(v));
      p.cost += cost.latency(dag, st);
      ++p.stages_costed;
      done |= st.ops();
      p.stages.push_back(std::move(st));
    }
    p.states = static_cast<int64_t>(p.stages.size());
    return {std::move(p)};
  }
  Solver solver(dag, cost, options, k);
  return solver.plans(dag.all());
}

StagePlan schedule(const OpDag& dag, StageCostModel& cost, const Options& options) {
  return std::move(schedule_best(dag, cost, options, 1).front());
}

double Contest::median(size_t k) const {
  std::vector<double> v = seconds.at(k);
  SYLVA_CHECK(!v.empty(), "[ios] candidate ", k, " was never timed");
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
double Contest::min(size_t k) const { return *std::min_element(seconds.at(k).begin(), seconds.at(k).end()); }
double Contest::max(size_t k) const { return *std::max_element(seconds.at(k).begin(), seconds.at(k).end()); }

Contest fastest(size_t n, int rounds, const std::function<double(size_t)>& run) {
  SYLVA_CHECK(n >= 1, "[ios] a contest needs at least one candidate");
  SYLVA_CHECK(rounds >= 1, "[ios] a contest needs at least one timed round, got ", rounds);
  const auto t0 = std::chrono::steady_clock::now();
  Contest c;
  c.seconds.assign(n, {});
  for (int round = 0; round <= rounds; ++round)
    for (size_t k = 0; k < n; ++k) {
      const double s = run(k);
      SYLVA_CHECK(std::isfinite(s) && s >= 0, "[ios] candidate ", k, " took ", s, " s");
      if (round > 0) c.seconds[k].push_back(s);
    }
  for (size_t k = 1; k < n; ++k)
    if (c.median(k) < c.median(c.best)) c.best = k;
  c.spent_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

bool valid_plan(const OpDag& dag, const StagePlan& plan, std::string* why) {
  const auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  OpSet done = 0;
  for (size_t k = 0; k < plan.stages.size(); ++k) {
    const Stage& st = plan.stages[k];
    OpSet in_stage = 0;
    for (OpSet g : st.groups) {
      if (!g) return fail("stage " + std::to_string(k) + " has an empty group");
      if (g & (in_stage | done)) return fail("stage " + std::to_string(k) + " runs an operator twice");
      in_stage |= g;
    }
    bool ok = true;
    for_each_op(in_stage, [&](int v) {
      const OpSet own = st.kind == Stage::Kind::merged ? 0 : [&] {
        for (OpSet g : st.groups)
          if (g & bit(v)) return g;
        return OpSet{0};
      }();
      // Inputs come from earlier stages, or earlier in the same group.
      if (dag.preds(v) & ~(done | own)) ok = false;
    });
    if (!ok) return fail("stage " + std::to_string(k) + " runs an operator before one of its inputs");
    done |= in_stage;
  }
  if (done != dag.all()) return fail("some operators never run");
  return true;
}

}  // namespace sylva::ios
