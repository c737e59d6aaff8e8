#include "sylva/runtime/options.h"

#include <array>
#include <sstream>
#include <vector>

#include "sylva/core/error.h"

namespace sylva {
namespace {

using O = Optimisation;

// The one table: the order is the enum's.
constexpr std::array<OptimisationInfo, kOptimisationCount> kTable{{
    {O::skip_zero_work, "skip_zero_work", "--no-skip-zero-work", "zero work", {},
     "skip the ops whose inputs are known zero (leaves' absent children, all-zero pulls)"},
    {O::trim_fused_zeros, "trim_fused_zeros", "--no-trim-fused-zeros", "zero work",
     {O::fusion, O::skip_zero_work}, "run fused groups without their known-zero inputs and unneeded outputs"},
    {O::eager_batching, "eager_batching", "--no-eager", "batching", {},
     "run the ops that read no child once over all rows, outside the task loop"},
    {O::lazy_param_grads, "lazy_param_grads", "--no-lazy", "batching", {},
     "compute parameter gradients as one GEMM over all rows after the task loop"},
    {O::ios, "ios", "--no-ios", "batching", {},
     "schedule F and its gradient with the IOS dynamic program (merges gate matmuls)"},
    {O::fusion, "fusion", "--no-fusion", "fusion", {}, "run chains of row-local ops as one fused pass per task"},
    {O::row_windows, "row_windows", "--no-row-windows", "copies", {},
     "copy children's rows straight into a concat's columns (and gradients back)"},
    {O::children_in_place, "children_in_place", "--no-children-in-place", "copies",
     {O::row_windows, O::skip_zero_work}, "read children that sit in consecutive rows as a view, without copying"},
    {O::task_local_values, "task_local_values", "--no-task-local", "memory", {},
     "keep values read only within a task in one task-sized block"},
    {O::lend_forward_arenas, "lend_forward_arenas", "--no-lend-arenas", "memory", {},
     "let values of F that the backward does not read lend their memory to the backward"},
    {O::direct_row_selection, "direct_row_selection", "--no-direct-selection", "copies", {},
     "select rows straight from a vertex function's rows"},
    {O::pull_from_table, "pull_from_table", "--no-pull-from-table", "copies", {},
     "pull embedding rows straight from the table (and add their gradient back into it)"},
    {O::streaming, "streaming", "--no-streaming", "streaming", {},
     "run the work outside the task loop on a second thread (or CUDA lane) beside it"},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kOptimisationCount; ++i)
    if (static_cast<int>(kTable[static_cast<size_t>(i)].id) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "optimisation table rows must follow the enum's order");

}  // namespace

std::span<const OptimisationInfo> optimisation_table() { return kTable; }

const OptimisationInfo& info(Optimisation o) { return kTable[static_cast<size_t>(o)]; }

Optimisation optimisation_named(std::string_view name) {
  std::string known;
  for (const OptimisationInfo& i : kTable) {
    if (name == i.name || name == i.flag) return i.id;
    known += known.empty() ? "" : ", ";
    known += i.name;
  }
  SYLVA_THROW("[options] no optimisation named '", name, "' (known: ", known, ")");
}

Optimisations dependents(Optimisation o) {
  Optimisations out;
  bool grew = true;
  while (grew) {  // the closure: what needs o, or needs what needs o
    grew = false;
    for (const OptimisationInfo& i : kTable) {
      if (out.has(i.id)) continue;
      if (i.needs.has(o) || i.needs.intersects(out)) {
        out = out.with({i.id});
        grew = true;
      }
    }
  }
  return out;
}

std::string Optimisations::names() const {
  std::string s;
  for (const OptimisationInfo& i : kTable)
    if (has(i.id)) {
      if (!s.empty()) s += ", ";
      s += i.name;
    }
  return s.empty() ? "none" : s;
}

std::string precision_unsupported(Precision p, DType dtype, const Backend& backend) {
  if (p != Precision::fp32 && dtype != DType::f32)
    return detail::concat("it is for float32 programs, and this one is ", dtype_name(dtype));
  return backend.precision_unsupported(p);
}

ExecutorOptions ExecutorOptions::reference() {
  ExecutorOptions o;
  o.optimisations = Optimisations::none();
  return o;
}

ExecutorOptions ExecutorOptions::without(Optimisation o) const { return without(Optimisations{o}); }

ExecutorOptions ExecutorOptions::without(Optimisations off) const {
  ExecutorOptions r = *this;
  for (const OptimisationInfo& i : kTable)
    if (off.has(i.id)) r.optimisations = r.optimisations.minus(Optimisations{i.id}.with(dependents(i.id)));
  return r;
}

void ExecutorOptions::validate() const {
  std::vector<std::string> conflicts;
  for (const OptimisationInfo& i : kTable) {
    if (!on(i.id)) continue;
    Optimisations missing = i.needs.minus(optimisations);
    if (!missing.empty())
      conflicts.push_back(detail::concat(i.name, " is on but needs ", missing.names(), ", which ",
                                         missing.names().find(',') == std::string::npos ? "is" : "are",
                                         " off (turn it off too, or use without(), which does)"));
  }
  if (threads < 0) conflicts.push_back(detail::concat("threads is ", threads, "; it must be >= 0 (0: the backend's)"));
  if (ios_options.r < 0 || ios_options.s < 0)
    conflicts.push_back(detail::concat("ios_options.r and .s must be >= 0 (0: no limit), got r = ", ios_options.r,
                                       ", s = ", ios_options.s));
  if (conflicts.empty()) return;
  std::string msg = "[options] ExecutorOptions do not hold together:";
  for (const std::string& c : conflicts) msg += "\n  - " + c;
  throw Error(msg);
}

std::string ExecutorOptions::to_text() const {
  std::ostringstream os;
  os << "ExecutorOptions\n"
     << "  placement: device " << device.str() << (backend ? " (own backend)" : "") << ", threads " << threads
     << ", seed " << seed << "\n"
     << "  batching: policy " << policy_name(policy) << "\n";
  const char* groups[] = {"batching", "zero work", "fusion", "copies", "memory", "streaming"};
  for (const char* g : groups) {
    if (std::string_view(g) != "batching") os << "  " << g << ":\n";
    for (const OptimisationInfo& i : kTable)
      if (i.group == g) {
        os << "    " << i.name << ": " << (on(i.id) ? "on" : "off");
        if (i.id == Optimisation::ios && on(i.id))
          os << " (" << ios::variant_name(ios_options.variant) << ", r " << ios_options.r << ", s " << ios_options.s
             << ")";
        os << "\n";
      }
  }
  os << "  numerics: precision " << precision_name(precision) << "\n";
  os << "  checks: check_numerics " << (check_numerics ? "on" : "off") << "\n"
     << "  memory budget: ";
  if (memory_budget_bytes == 0)
    os << "80% of available memory\n";
  else
    os << memory_budget_bytes << " bytes\n";
  return os.str();
}

}  // namespace sylva
