// Profiler: where the time of training steps goes, by op category, built
// on the Executor's observer hook.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "sylva/runtime/executor.h"

namespace sylva {

/// What kind of work an op does (each op's OpDef::category).
using ir::OpCategory;

/// The category of `op`. Apply and ApplyGrad are containers (their time is
/// their body's ops plus the task loop) and have no category: sylva::Error.
OpCategory op_category(ir::OpKind op);
const char* category_name(OpCategory c);

/// Aggregates OpEvents. Attach with `executor.set_observer(profiler.observer())`,
/// tell it the wall time of the profiled work with add_wall_time(), then
/// print report(). The profiler must outlive the observer it hands out.
///
/// Time is split into the op categories; "task loop" is the time inside
/// apply/∂apply not spent in any op of F (the loop, the push permutation);
/// "outside ops" is the wall time not covered by any op (optimiser step,
/// clipping, scheduling, the framework).
///
/// @code
/// Profiler prof;
/// trainer.executor().set_observer(prof.observer());
/// Timer t;
/// for (const GraphBatch& b : batches) trainer.step(b);
/// prof.add_wall_time(t.seconds());
/// std::fputs(prof.report().c_str(), stdout);
/// @endcode
class Profiler {
 public:
  struct Stat {
    int64_t calls = 0;
    int64_t rows = 0;
    double seconds = 0.0;
    int64_t flops = 0;  ///< OpEvent::flops summed (GEMMs 2·m·k·n, elementwise one per element)
  };

  /// An observer that calls record().
  Observer observer();
  void record(const OpEvent& e);
  void add_wall_time(double seconds) { wall_ += seconds; }
  void reset();

  const Stat& category(OpCategory c) const { return categories_[static_cast<size_t>(c)]; }
  /// Per op name ("matmul", "gather", ...), across all graphs; ops never seen are left out.
  std::map<std::string, Stat> ops() const;
  /// Time in apply/∂apply not spent in the ops of F and ∂F.
  double task_loop_seconds() const;
  /// Time of every op, categories only (containers not double-counted).
  double op_seconds() const;
  double wall_seconds() const { return wall_; }
  /// The wall time not covered by ops or task loops (0 if the wall time
  /// given is shorter than the observed time).
  double outside_seconds() const;

  /// A table of the categories with time and share of the wall time (or of
  /// the observed time if no wall time was given), then the `top_ops`
  /// most expensive ops.
  std::string report(int top_ops = 8) const;

 private:
  std::array<Stat, static_cast<size_t>(OpCategory::count_)> categories_{};
  std::array<Stat, ir::kMaxOpKinds> ops_{};  // by OpKind: no allocation per event
  Stat fused_{};  // fused groups (counted as elementwise)
  double apply_seconds_ = 0.0;  // Apply and ApplyGrad events (containers)
  double body_seconds_ = 0.0;   // ops inside F and ∂F (task >= 0)
  double wall_ = 0.0;
};

}  // namespace sylva
