// IOS on the CNN runner, measured: the stage costs the DP searches with
// (measured as run_plan runs the stages, cached with their spread, in a
// file across runs) and the final choice between candidate plans, each run
// end to end.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
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
                             int repeats, StageCosts* costs)
    : runner_(runner), block_(block), part_(part), cores_(cores), repeats_(repeats) {
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
  for (int k = 0; k <= repeats_; ++k) {
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
                 int cores) {
  runner.synchronize();
  const auto start = std::chrono::steady_clock::now();
  run_plan(runner, block, part, plan, cores);
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
