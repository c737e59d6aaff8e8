// The executor's flags of the examples and benchmark drivers: the --no-*
// ablation flags, one per row of sylva::optimisation_table() (a new
// optimisation gets its flag everywhere without being listed here), and
// --precision fp32|bf16 (ExecutorOptions::precision).
#pragma once

#include <array>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <sylva/sylva.h>

namespace sylva::examples {

class OptimisationFlags {
 public:
  /// Adds the flags to `app` (in their own --help group); `prefix` goes
  /// before each help line ("sylva: " in drivers that run other systems).
  explicit OptimisationFlags(CLI::App& app, const std::string& prefix = "") {
    for (const OptimisationInfo& i : optimisation_table())
      app.add_flag(std::string(i.flag), off_[static_cast<size_t>(i.id)],
                   prefix + "turn off " + std::string(i.name) + ": " + std::string(i.help))
          ->group("Ablation (each flag turns one optimisation off, with what needs it)");
    app.add_option("--precision", precision_,
                   prefix + "precision of the GEMMs: fp32, or bf16 (bfloat16 operands, float32 accumulation, "
                            "float32 master weights; needs AVX512_BF16)")
        ->check(CLI::IsMember({"fp32", "bf16"}))
        ->capture_default_str();
  }
  OptimisationFlags(const OptimisationFlags&) = delete;
  OptimisationFlags& operator=(const OptimisationFlags&) = delete;

  /// --precision's value.
  Precision precision() const { return precision_named(precision_); }
  /// The optimisations named by the flags given.
  Optimisations named() const {
    Optimisations s;
    for (const OptimisationInfo& i : optimisation_table())
      if (off_[static_cast<size_t>(i.id)]) s = s.with({i.id});
    return s;
  }
  /// Every optimisation but those named and what needs them
  /// (ExecutorOptions::without). Where that turns off more than was
  /// named, a line to `log` says which and why, so nothing is off unsaid.
  Optimisations chosen(std::FILE* log = stderr) const {
    const Optimisations named_off = named();
    const Optimisations kept = ExecutorOptions{}.without(named_off).optimisations;
    const Optimisations also = Optimisations::all().minus(kept).minus(named_off);
    if (!also.empty() && log)
      std::fprintf(log, "note: also off, since they need what the flags turn off: %s\n", also.names().c_str());
    return kept;
  }

 private:
  std::array<bool, kOptimisationCount> off_{};
  std::string precision_ = "fp32";
};

}  // namespace sylva::examples
