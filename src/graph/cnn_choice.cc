// IOS on the CNN runner, measured: the stage costs the DP searches with
// (measured as run_plan runs the stages, cached with their spread, in a
// file across runs) and the final choice between candidate plans, each run
// end to end.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>
#include <sstream>

#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {

namespace {

constexpr const char* kHeader = "# sylva IOS stage costs v1: ";

bool same_stages(const ios::StagePlan& a, const ios::StagePlan& b) {
  if (a.stages.size() != b.stages.size()) return false;
  for (size_t k = 0; k < a.stages.size(); ++k)
    if (a.stages[k].kind != b.stages[k].kind || a.stages[k].groups != b.stages[k].groups) return false;
  return true;
}

// The last-level cache's bytes (Linux sysfs; 32 MiB if it cannot be read).
size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    size_t n = 0;
    std::string unit;
    if (!(in >> n)) continue;
    in >> unit;
    best = std::max(best, n * (unit == "M" ? 1 << 20 : unit == "K" ? 1 << 10 : 1));
  }
  return best ? best : size_t{32} << 20;
}

// `bytes` (at most twice the last-level cache) read by `threads` OpenMP
// threads, each its share of a buffer of its own, one byte per cache line.
// Read, not written: written lines would leave the caches dirty, and the
// stage would pay for writing them back, which a real run does not.
void pass_through_caches(int threads, size_t bytes) {
  static const size_t cap = 2 * last_level_cache_bytes();
  const size_t share = std::min(bytes, cap) / static_cast<size_t>(threads);
  static std::atomic<unsigned> sink{0};
#pragma omp parallel num_threads(threads)
  {
    thread_local std::vector<unsigned char> buffer;
    if (buffer.size() < share) buffer.assign(share, 1);
    unsigned sum = 0;
    for (size_t i = 0; i < share; i += 64) sum += buffer[i];
    sink.fetch_add(sum, std::memory_order_relaxed);
  }
}

}  // namespace

StageCosts::StageCosts(std::string context, std::string file) : context_(std::move(context)), file_(std::move(file)) {
  SYLVA_CHECK(context_.find('\n') == std::string::npos, "[ios] a stage-cost context is one line");
  if (file_.empty() || !std::filesystem::exists(file_)) return;
  std::istringstream in(read_file(file_));
  std::string line;
  if (!std::getline(in, line) || !line.starts_with(kHeader))
    SYLVA_THROW("[ios] ", file_, ":1: not a stage-cost file (it starts with '", kHeader, "')");
  if (line.substr(std::string(kHeader).size()) != context_) return;  // measured for something else
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    std::istringstream f(line);
    Cost c;
    std::string key;
    f >> c.median >> c.min >> c.max;
    std::getline(f >> std::ws, key);
    SYLVA_CHECK(f.good() || f.eof(), "[ios] ", file_, ":", n, ": expected 'median min max key', got '", line, "'");
    SYLVA_CHECK(!key.empty() && c.min >= 0 && c.min <= c.median && c.median <= c.max, "[ios] ", file_, ":", n,
                ": expected 'median min max key' with min <= median <= max, got '", line, "'");
    costs_[key] = c;
    ++loaded_;
  }
}

const StageCosts::Cost* StageCosts::find(const std::string& key) const {
  const auto it = costs_.find(key);
  return it == costs_.end() ? nullptr : &it->second;
}

void StageCosts::put(const std::string& key, const Cost& c) { costs_[key] = c; }

void StageCosts::save() const {
  if (file_.empty()) return;
  std::ostringstream out;
  out.precision(9);
  out << kHeader << context_ << "\n";
  for (const auto& [key, c] : costs_) out << c.median << " " << c.min << " " << c.max << " " << key << "\n";
  write_file_atomically(file_, out.str());
}

std::string stage_key(const ios::CnnBlock& block, const ios::BlockPart& part, const ios::Stage& stage) {
  const std::vector<const ios::CnnNode*> ops = block.ops();
  std::string key = stage.kind == ios::Stage::Kind::merged ? "merged " : "";
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (g) key += " | ";
    bool first = true;
    for (int v : part.dag.topo_order())
      if (stage.groups[g] >> v & 1) {
        key += (first ? "" : ",") + ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]->name;
        first = false;
      }
  }
  return key;
}

ProfilingCost::ProfilingCost(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, int cores,
                             int repeats, StageCosts* costs, size_t rest_bytes)
    : runner_(runner), block_(block), part_(part), cores_(cores), repeats_(repeats), rest_bytes_(rest_bytes) {
  SYLVA_CHECK(repeats_ >= 1, "[cnn] profiling needs at least one repeat, got ", repeats_);
  if (!costs) own_ = std::make_unique<StageCosts>("");
  costs_ = costs ? costs : own_.get();
}

double ProfilingCost::latency(const ios::OpDag&, const ios::Stage& stage) {
  const std::string key = stage_key(block_, part_, stage);
  if (const StageCosts::Cost* c = costs_->find(key)) return c->median;
  const std::vector<const ios::CnnNode*> ops = block_.ops();
  std::vector<double> t;
  runner_.synchronize();
  std::vector<const ios::CnnNode*> members;  // the stage's operators
  for (int v = 0; v < part_.dag.size(); ++v)
    if (stage.ops() >> v & 1) members.push_back(ops[static_cast<size_t>(part_.ops[static_cast<size_t>(v)])]);
  for (int k = 0; k <= repeats_; ++k) {
    if (rest_bytes_ && runner_.backend().concurrent_calls()) {
      pass_through_caches(cores_, rest_bytes_);
      runner_.read_inputs(members);
    }
    const auto start = std::chrono::steady_clock::now();
    runner_.run_stage(ops, part_, stage, cores_);
    runner_.synchronize();
    if (k > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  ++profiled_;
  const StageCosts::Cost c{t[t.size() / 2], t.front(), t.back()};
  costs_->put(key, c);
  return c.median;
}

double time_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
                 int cores, std::vector<double>* stage_seconds) {
  runner.synchronize();
  const auto start = std::chrono::steady_clock::now();
  if (!stage_seconds) {
    run_plan(runner, block, part, plan, cores);
  } else {
    const std::vector<const ios::CnnNode*> ops = block.ops();
    stage_seconds->clear();
    auto before = start;
    for (const ios::Stage& st : plan.stages) {
      runner.run_stage(ops, part, st, cores);
      runner.synchronize();
      const auto after = std::chrono::steady_clock::now();
      stage_seconds->push_back(std::chrono::duration<double>(after - before).count());
      before = after;
    }
  }
  runner.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

PlanChoice choose_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part,
                       const std::vector<ios::StagePlan>& candidates, int cores, int rounds) {
  SYLVA_CHECK(!candidates.empty(), "[cnn] no candidate plans to choose from");
  PlanChoice c;
  std::vector<size_t> distinct;  // indices into candidates
  for (size_t k = 0; k < candidates.size(); ++k) {
    std::string why;
    SYLVA_CHECK(ios::valid_plan(part.dag, candidates[k], &why), "[cnn] candidate plan ", k, ": ", why);
    const auto it = std::find_if(distinct.begin(), distinct.end(),
                                 [&](size_t d) { return same_stages(candidates[d], candidates[k]); });
    const size_t first = it == distinct.end() ? k : *it;
    if (first == k) distinct.push_back(k);
    c.same.push_back(first);
  }
  c.contest = ios::fastest(distinct.size(), rounds,
                           [&](size_t d) { return time_plan(runner, block, part, candidates[distinct[d]], cores); });
  // Report per candidate: contest.seconds[k] for every k (equal ones share).
  ios::Contest per;
  per.spent_s = c.contest.spent_s;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const size_t d = static_cast<size_t>(std::find(distinct.begin(), distinct.end(), c.same[k]) - distinct.begin());
    per.seconds.push_back(c.contest.seconds[d]);
  }
  per.best = distinct[c.contest.best];
  c.contest = std::move(per);
  return c;
}

}  // namespace sylva::cnn
