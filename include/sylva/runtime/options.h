// ExecutorOptions: what an Executor runs on and which optimisations it
// applies. The optimisations are one set (Optimisations) described by one
// table (optimisation_table()): their names, groups, what each needs and
// its one-line help. The examples' and bench_suite's --no-* flags and the
// Python keywords are generated from that table, and validate() checks
// what it says each one needs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sylva/backend/backend.h"
#include "sylva/core/device.h"
#include "sylva/runtime/schedule.h"
#include "sylva/sched/ios.h"

namespace sylva {

/// One optimisation of the executor. Each gives the same results as
/// running without it (tests/runtime/invariance_test.cc checks every one
/// alone); docs/architecture.md explains each.
enum class Optimisation : uint8_t {
  /// Ops of F whose inputs are messages absent at every vertex of the task
  /// (leaves) or an all-zero pulled block produce zeros without running;
  /// in ∂F the matching parameter-gradient products and the gradients that
  /// flow only to absent children (or to pulled rows with id -1) are not
  /// computed.
  skip_zero_work,
  /// In a task where an input of a fused group is known zero, the group
  /// runs a program with what that makes trivial left out
  /// (passes::without_zero_inputs), and leaves unwritten the outputs the
  /// task does not need. Needs fusion and skip_zero_work.
  trim_fused_zeros,
  /// Ops of F that read no child's message (the pull and what is computed
  /// from it alone, e.g. x·W) run once over all rows before the task loop;
  /// in ∂F, gradients that reach no child run once after it.
  eager_batching,
  /// Parameter gradients dW += Xᵀ·dY of F run once after ∂F's task loop, as
  /// one GEMM over all rows, instead of one small GEMM per task.
  lazy_param_grads,
  /// F and ∂F are scheduled by the IOS dynamic program
  /// (ExecutorOptions::ios_options) and re-emitted in its order: matmuls
  /// that share their left operand and have fixed right operands become one
  /// matmul over the weights concatenated once per minibatch. Read when the
  /// executor is built.
  ios,
  /// Directly linked row-local ops of F and ∂F (elementwise math, slices,
  /// concats) run as one pass over a task's rows (passes::fusion_groups).
  fusion,
  /// A concat of F's gathered children copies their rows straight into its
  /// columns, and in ∂F a gather gradient adds a slice's columns straight
  /// into the children's message gradients (where the backend
  /// has_row_windows()).
  row_windows,
  /// Where every vertex's children sit in consecutive rows in slot order
  /// (complete trees in BFS order), F's concat of its gathers is a view of
  /// the children's message rows and ∂F writes its gradient in place.
  /// Needs row_windows and skip_zero_work.
  children_in_place,
  /// A per-vertex value that only ops of the same task read lives in one
  /// block the size of the largest task that writes it, reused by every
  /// task, instead of a row per vertex of the minibatch.
  task_local_values,
  /// A value of F kept per vertex that nothing reads once F's task loop is
  /// done lends its arena to a per-vertex value of ∂F. Values of F are then
  /// not kept past backward().
  lend_forward_arenas,
  /// Where every consumer of a vertex function's output is a select_rows of
  /// it, the selections copy their rows straight from the function's rows
  /// (and their gradients go straight back).
  direct_row_selection,
  /// Where a vertex function's pull is a lookup of an embedding table read
  /// by nothing else, F's pull copies rows straight from the table and ∂F
  /// adds its gradient straight into the table's gradient rows.
  pull_from_table,
  /// The work eager and lazy batching moved out of the task loop runs on a
  /// second thread (the CPU) or lane (CUDA) while the loop runs. Uses one
  /// more core than `threads`: skipped where `threads` (or 1) is not below
  /// the cores this process may use.
  streaming,
};
inline constexpr int kOptimisationCount = static_cast<int>(Optimisation::streaming) + 1;

/// A set of optimisations.
class Optimisations {
 public:
  constexpr Optimisations() = default;
  constexpr Optimisations(std::initializer_list<Optimisation> list) {
    for (Optimisation o : list) bits_ |= bit(o);
  }
  static constexpr Optimisations all() { return from_bits((1u << kOptimisationCount) - 1); }
  static constexpr Optimisations none() { return {}; }

  constexpr bool has(Optimisation o) const { return (bits_ & bit(o)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr Optimisations with(Optimisations o) const { return from_bits(bits_ | o.bits_); }
  constexpr Optimisations minus(Optimisations o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr bool contains(Optimisations o) const { return (bits_ & o.bits_) == o.bits_; }
  constexpr bool intersects(Optimisations o) const { return (bits_ & o.bits_) != 0; }
  constexpr bool operator==(const Optimisations&) const = default;
  /// The names in the table's order, comma-separated ("none" when empty).
  std::string names() const;

 private:
  static constexpr uint32_t bit(Optimisation o) { return 1u << static_cast<int>(o); }
  static constexpr Optimisations from_bits(uint32_t b) {
    Optimisations s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

/// A row of the one table of optimisations.
struct OptimisationInfo {
  Optimisation id;
  std::string_view name;   ///< snake_case: the Python keyword and the to_text() name
  std::string_view flag;   ///< the command-line flag that turns it off ("--no-fusion")
  std::string_view group;  ///< what it governs: batching, zero work, fusion, copies, memory, streaming
  Optimisations needs;     ///< what must be on with it (validate() checks)
  std::string_view help;   ///< one line for --help and the docs
};

/// Every optimisation, in a fixed order (the enum's).
std::span<const OptimisationInfo> optimisation_table();
const OptimisationInfo& info(Optimisation o);
/// By its name (snake_case) or its flag; sylva::Error listing the known
/// names otherwise.
Optimisation optimisation_named(std::string_view name);
/// The optimisations that need `o`, directly or through others.
Optimisations dependents(Optimisation o);

/// Why GEMMs cannot run in `p` for a program of `dtype` on `backend`, or
/// "" when they can (the Executor refuses with this text): bf16 is for
/// float32 programs, on backends with bf16 GEMMs.
std::string precision_unsupported(Precision p, DType dtype, const Backend& backend);

struct ExecutorOptions {
  // Where and how the batch runs.
  BatchingPolicy policy = BatchingPolicy::Bfs;
  /// Where kernels run and values live. On a device with memory of its own
  /// (CUDA) the executor keeps its arenas, values and parameter copies
  /// there: parameters are uploaded at each forward() and their gradients
  /// added into the ParameterSet at the end of each backward().
  Device device = Device::cpu();
  /// A backend to use instead of backend_for(device) (your own device, or a
  /// test double); it must outlive the executor.
  Backend* backend = nullptr;
  /// Seed of random ops (dropout).
  uint64_t seed = 0;
  /// Threads for kernels (GEMMs); 0 leaves the backend's setting.
  int threads = 0;

  /// The optimisations applied: all by default; reference() has none.
  /// Turn one off with without(), which also turns off what needs it.
  Optimisations optimisations = Optimisations::all();
  /// The IOS search's variant and pruning (with Optimisation::ios).
  ios::Options ios_options{.variant = ios::Variant::both, .r = 3, .s = 8};

  /// The precision of GEMMs (matmul). fp32 (the default): float32
  /// throughout. bf16: GEMM operands are rounded to bfloat16 and their
  /// products accumulated in float32 (about twice the multiply-adds per
  /// cycle on CPUs with AVX512_BF16); the GEMMs read bfloat16 copies of the
  /// parameters, refreshed once per forward, while the parameters, their
  /// gradients, the optimiser's state and everything else stay float32.
  /// The Executor refuses bf16 for a float64 program and on a backend or
  /// CPU without bf16 GEMMs, naming what is missing.
  Precision precision = Precision::fp32;

  /// Stop at the first NaN or infinity an op computes, in F, ∂F or the
  /// program, forward or backward: a sylva::Error names the pass, the
  /// graph, the node and its op, the step and the vertex and sample of the
  /// first bad row (instead of a NaN loss later). Costs a scan of every
  /// op's output (and, on a device, a copy of it to the host); off, nothing.
  bool check_numerics = false;
  /// Host memory a minibatch's values may take beyond what the executor
  /// already holds; forward() estimates a batch's need before allocating
  /// and refuses a larger batch with a sylva::Error naming it. 0: 80% of
  /// available_memory_bytes() at that moment. Not applied to device memory
  /// (CUDA). An allocation that still fails is a sylva::Error too.
  size_t memory_budget_bytes = 0;

  /// Every optimisation off: the correctness oracle the optimised runs are
  /// compared against.
  static ExecutorOptions reference();
  bool on(Optimisation o) const { return optimisations.has(o); }
  /// These options with `o` off, and with it everything that needs it
  /// (dependents(o)), so that the result validates.
  ExecutorOptions without(Optimisation o) const;
  ExecutorOptions without(Optimisations off) const;
  /// Throws one sylva::Error naming every conflict: an optimisation on
  /// without one it needs, a negative thread count, IOS pruning below 0.
  /// The Executor calls it; nothing is overridden silently.
  void validate() const;
  /// The options as an indented tree, the optimisations by group.
  std::string to_text() const;
};

}  // namespace sylva
