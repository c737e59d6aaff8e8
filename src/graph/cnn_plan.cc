// IOS plans on the CNN runner: a StagePlan run stage by stage (concurrent
// groups on threads of a pool on the CPU, on lanes of the backend on a
// device), and IOS's profiling cost model, which times stages that way.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>

#include "sylva/core/error.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {

using ios::CnnNode;

namespace {

// Runs the operators of group `g` (in topological order).
void run_group(CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part, ios::OpSet g) {
  for (int v : part.dag.topo_order())
    if (g >> v & 1) r.run(*ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
}

// The same with `threads` OpenMP threads for each operator (the CPU).
void run_group_on(int threads, CnnRunner& r, const std::vector<const CnnNode*>& ops, const ios::BlockPart& part,
                  ios::OpSet g) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  run_group(r, ops, part, g);
  omp_set_num_threads(before);
}

// Runs group(k), k < groups, on lanes of `b`: group 0 on the caller's lane
// (the main one), the others each on a lane of its own while there are
// enough, then round robin. The other lanes start after the main lane's
// work so far (fork), and the main lane goes on after all of theirs (join,
// last lane first): a record() on one lane, a wait() on the other.
void run_on_lanes(Backend& b, int groups, const std::function<void(int)>& group) {
  const int lanes = std::min(groups, b.reserve_lanes(groups));
  const int main = b.set_lane(0);
  b.set_lane(main);
  // Lane of the k-th used: the main one, then the others in order.
  const auto lane = [&](int k) { return k == 0 ? main : k <= main ? k - 1 : k; };
  for (int k = 1; k < lanes; ++k) {
    const uint64_t e = b.record();
    b.set_lane(lane(k));
    b.wait(e);
    b.set_lane(main);
  }
  const auto join = [&] {
    for (int k = lanes - 1; k >= 1; --k) {
      b.set_lane(lane(k));
      const uint64_t e = b.record();
      b.set_lane(main);
      b.wait(e);
    }
  };
  try {
    for (int k = 0; k < groups; ++k) {
      b.set_lane(lane(k % lanes));
      group(k);
    }
  } catch (...) {
    join();
    throw;
  }
  join();
}

}  // namespace

void CnnRunner::run_stage(const std::vector<const CnnNode*>& ops, const ios::BlockPart& part, const ios::Stage& st,
                          int cores) {
  if (st.kind == ios::Stage::Kind::merged) {
    std::vector<const CnnNode*> convs;
    for (int v : part.dag.topo_order())
      if (st.groups[0] >> v & 1) convs.push_back(ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]);
    const int before = omp_get_max_threads();
    omp_set_num_threads(cores);
    run_merged(convs);
    omp_set_num_threads(before);
    return;
  }
  if (st.groups.size() == 1) {
    run_group_on(cores, *this, ops, part, st.groups[0]);
    return;
  }
  const int groups = static_cast<int>(st.groups.size());
  if (!backend().concurrent_calls()) {  // a device: a lane per group
    run_on_lanes(backend(), groups,
                 [&](int k) { run_group(*this, ops, part, st.groups[static_cast<size_t>(k)]); });
    return;
  }
  // The CPU: the groups share one OpenMP team of at most `cores` threads,
  // the team the operators of the other stages run on, so no more threads
  // than cores ever compete. (A pool of threads of its own, tried first,
  // ran beside the OpenMP team's spinning workers: InceptionV3, batch 1,
  // two cores, IOS-Both 0.91-0.99x Sequential with it, 1.03-1.09x on the
  // team; docs/notes/ios.md.) With more cores than groups each group's
  // operators get cores / groups threads of a nested team.
  const int team = std::min(groups, cores), each = std::max(1, cores / groups);
  const int levels = omp_get_max_active_levels();
  if (each > 1) omp_set_max_active_levels(2);
  std::exception_ptr err;
#pragma omp parallel num_threads(team)
  {
    try {
      if (each > 1) omp_set_num_threads(each);
      for (int k = omp_get_thread_num(); k < groups; k += team)
        run_group(*this, ops, part, st.groups[static_cast<size_t>(k)]);
    } catch (...) {
#pragma omp critical(sylva_cnn_stage_error)
      if (!err) err = std::current_exception();
    }
  }
  omp_set_max_active_levels(levels);
  if (err) std::rethrow_exception(err);
}

void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores) {
  SYLVA_CHECK(cores >= 1, "[cnn] cores must be >= 1, got ", cores);
  const std::vector<const CnnNode*> ops = block.ops();
  for (const ios::Stage& st : plan.stages) runner.run_stage(ops, part, st, cores);
}

bool ProfilingCost::mergeable(const ios::OpDag& dag, ios::OpSet ops) {
  const std::vector<const CnnNode*> all = block_.ops();
  std::vector<const CnnNode*> convs;
  for (int v = 0; v < dag.size(); ++v)
    if (ops >> v & 1) convs.push_back(all[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])]);
  return ios::merge_convs(convs).has_value();
}

}  // namespace sylva::cnn
