// IOS plans on the CNN runner: a StagePlan run stage by stage (concurrent
// groups on threads of a pool on the CPU, on lanes of the backend on a
// device), and IOS's profiling cost model, which times stages that way.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

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

// Persistent threads for the groups of concurrent stages: creating a
// thread per group and stage cost more than the small operators it runs,
// and each new thread starts with cold oneDNN and OpenMP state.
class GroupPool {
 public:
  ~GroupPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  // Runs jobs[0] on the caller and jobs[k] on worker k - 1; rethrows the
  // first error. Callers from several threads take turns.
  void run(const std::vector<std::function<void()>>& jobs) {
    std::lock_guard<std::mutex> turn(busy_);
    std::unique_lock<std::mutex> lock(m_);
    while (threads_.size() + 1 < jobs.size()) {
      const size_t k = threads_.size();
      threads_.emplace_back([this, k] { loop(k); });
    }
    jobs_ = &jobs;
    errors_.assign(jobs.size(), nullptr);
    pending_ = static_cast<int>(jobs.size()) - 1;
    ++generation_;
    lock.unlock();
    work_.notify_all();
    try {
      jobs[0]();
    } catch (...) {
      errors_[0] = std::current_exception();
    }
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
    jobs_ = nullptr;
    for (const std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
  void loop(size_t k) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!jobs_ || k + 1 >= jobs_->size()) continue;  // not needed this time
      const std::function<void()>& job = (*jobs_)[k + 1];
      lock.unlock();
      std::exception_ptr err;
      try {
        job();
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      errors_[k + 1] = err;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex busy_, m_;
  std::condition_variable work_, done_;
  std::vector<std::thread> threads_;
  const std::vector<std::function<void()>>* jobs_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

GroupPool& group_pool() {
  static GroupPool pool;
  return pool;
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
  const int each = std::max(1, cores / groups);
  std::vector<std::function<void()>> jobs;
  for (ios::OpSet g : st.groups) jobs.push_back([&, g] { run_group_on(each, *this, ops, part, g); });
  group_pool().run(jobs);
}

void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores) {
  SYLVA_CHECK(cores >= 1, "[cnn] cores must be >= 1, got ", cores);
  const std::vector<const CnnNode*> ops = block.ops();
  for (const ios::Stage& st : plan.stages) runner.run_stage(ops, part, st, cores);
}

double ProfilingCost::latency(const ios::OpDag&, const ios::Stage& stage) {
  if (auto it = cache_.find(stage.groups); it != cache_.end()) return it->second;
  SYLVA_CHECK(repeats_ >= 1, "[cnn] profiling needs at least one repeat, got ", repeats_);
  const std::vector<const CnnNode*> ops = block_.ops();
  std::vector<double> t;
  runner_.synchronize();
  for (int k = 0; k <= repeats_; ++k) {
    const auto start = std::chrono::steady_clock::now();
    runner_.run_stage(ops, part_, stage, cores_);
    runner_.synchronize();
    if (k > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return cache_[stage.groups] = t[t.size() / 2];
}

bool ProfilingCost::mergeable(const ios::OpDag& dag, ios::OpSet ops) {
  const std::vector<const CnnNode*> all = block_.ops();
  std::vector<const CnnNode*> convs;
  for (int v = 0; v < dag.size(); ++v)
    if (ops >> v & 1) convs.push_back(all[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])]);
  return ios::merge_convs(convs).has_value();
}

}  // namespace sylva::cnn
