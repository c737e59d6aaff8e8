// Internal: the pieces of data-parallel training that the host step
// (data_parallel.cc) and the device step (device_parallel.cc) share.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sylva/train/trainer.h"

namespace sylva::detail {

/// The union of sorted row lists, into `into`.
void merge_rows(std::vector<int32_t>& into, std::span<const int32_t> rows);

/// Every rank's hash of every parameter's value, compared with rank 0's:
/// sylva::Error naming the first rank and parameter that differ.
void check_replicas(dist::Communicator& comm, const std::vector<Parameter*>& all, int64_t step);

/// What this rank runs in a step: its share (default mode: one unit), or its
/// parts (deterministic mode: parts split independently of the world size,
/// then parts over ranks), both by work.
struct UnitPlan {
  std::vector<std::vector<int>> units;  // sample indices per unit
  std::vector<int> mine;                // this rank's units, ascending
  double imbalance = 1.0;               // the ranks' largest work over the mean
};
UnitPlan plan_units(const GraphBatch& batch, const DataParallelOptions& po, int world, int rank);

}  // namespace sylva::detail
