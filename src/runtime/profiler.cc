#include "sylva/runtime/profiler.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/ir/graph.h"

namespace sylva {

using ir::OpKind;

OpCategory op_category(OpKind op) {
  SYLVA_CHECK(!ir::has(ir::op_def(op).flags, ir::OpFlag::container), "[profiler] ", ir::op_name(op),
              " is a container and has no category");
  return ir::op_def(op).category;
}

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::gemm: return "GEMM";
    case OpCategory::elementwise: return "elementwise";
    case OpCategory::softmax_loss: return "softmax / loss";
    case OpCategory::data_movement: return "data movement";
    case OpCategory::reduction: return "reductions";
    case OpCategory::param_grad: return "parameter gradients";
    case OpCategory::other: return "other ops";
    case OpCategory::count_: break;
  }
  return "?";
}

Observer Profiler::observer() {
  return [this](const OpEvent& e) { record(e); };
}

void Profiler::record(const OpEvent& e) {
  const double s = std::chrono::duration<double>(e.elapsed).count();
  if (ir::has(ir::op_def(e.node.op).flags, ir::OpFlag::container)) {
    apply_seconds_ += s;
    return;
  }
  if (e.phase != EventPhase::program) body_seconds_ += s;
  const bool fused = !e.fused.empty();
  Stat& by_category = categories_[static_cast<size_t>(fused ? OpCategory::elementwise : op_category(e.node.op))];
  for (Stat* st : {&by_category, fused ? &fused_ : &ops_[static_cast<size_t>(e.node.op)]}) {
    ++st->calls;
    st->rows += e.rows;
    st->seconds += s;
    st->flops += e.flops;
  }
}

std::map<std::string, Profiler::Stat> Profiler::ops() const {
  std::map<std::string, Stat> out;
  for (size_t k = 0; k < ops_.size(); ++k)
    if (ops_[k].calls > 0) out.emplace(std::string(ir::op_name(static_cast<OpKind>(k))), ops_[k]);
  if (fused_.calls > 0) out.emplace("fused group", fused_);
  return out;
}

void Profiler::reset() { *this = Profiler(); }

double Profiler::task_loop_seconds() const { return std::max(0.0, apply_seconds_ - body_seconds_); }

double Profiler::op_seconds() const {
  double s = 0;
  for (const Stat& st : categories_) s += st.seconds;
  return s;
}

double Profiler::outside_seconds() const { return std::max(0.0, wall_ - op_seconds() - task_loop_seconds()); }

std::string Profiler::report(int top_ops) const {
  const double total = wall_ > 0 ? std::max(wall_, op_seconds() + task_loop_seconds()) : op_seconds() + task_loop_seconds();
  std::string out;
  char line[160];
  auto row = [&](const char* name, double s, int64_t calls) {
    std::snprintf(line, sizeof line, "  %-26s %10.3f s %6.1f%% %12ld\n", name, s, total > 0 ? 100 * s / total : 0.0,
                  static_cast<long>(calls));
    out += line;
  };
  std::snprintf(line, sizeof line, "  %-26s %12s %7s %12s\n", "where the time goes", "time", "share", "op calls");
  out += line;
  for (size_t c = 0; c < categories_.size(); ++c)
    if (categories_[c].calls > 0)
      row(category_name(static_cast<OpCategory>(c)), categories_[c].seconds, categories_[c].calls);
  row("task loop (inside apply)", task_loop_seconds(), 0);
  if (wall_ > 0) row("outside ops (optimiser)", outside_seconds(), 0);
  std::snprintf(line, sizeof line, "  %-26s %10.3f s\n", wall_ > 0 ? "wall" : "observed", total);
  out += line;
  const std::map<std::string, Stat> by_name = this->ops();
  std::vector<std::pair<std::string, Stat>> ops(by_name.begin(), by_name.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  if (top_ops > 0 && !ops.empty()) out += "  top ops:\n";
  for (size_t i = 0; i < ops.size() && i < static_cast<size_t>(std::max(top_ops, 0)); ++i) {
    std::snprintf(line, sizeof line, "    %-28s %10.3f s %6.1f%% %10ld calls %12ld rows\n", ops[i].first.c_str(),
                  ops[i].second.seconds, total > 0 ? 100 * ops[i].second.seconds / total : 0.0,
                  static_cast<long>(ops[i].second.calls), static_cast<long>(ops[i].second.rows));
    out += line;
  }
  return out;
}

}  // namespace sylva
