// Batching policies and the schedule they produce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sylva/runtime/graph_batch.h"

namespace sylva {

/// How vertices are grouped into tasks (batched evaluations of F).
enum class BatchingPolicy : uint8_t {
  Serial,  ///< one vertex per task, sample by sample (the unbatched baseline)
  Bfs,     ///< Cavs: task t holds every vertex whose children all lie in tasks < t
};

const char* policy_name(BatchingPolicy p);
/// "serial" or "bfs"; throws sylva::Error otherwise.
BatchingPolicy parse_policy(const std::string& name);

/// One batched evaluation of F over rows [offset, offset + bs).
struct Task {
  int64_t offset = 0;
  int64_t bs = 0;
  bool operator==(const Task&) const = default;
};

/// Tasks in execution order, and the row of every vertex. Rows are laid
/// out in task order, so each task reads and writes one contiguous block.
struct Schedule {
  BatchingPolicy policy = BatchingPolicy::Bfs;
  std::vector<Task> tasks;
  std::vector<int32_t> vertex_of_row;  // row -> global vertex
  std::vector<int32_t> row_of_vertex;  // global vertex -> row

  /// O(V + E). Throws sylva::Error if the batch has a cycle.
  static Schedule build(const GraphBatch& batch, BatchingPolicy policy);
  int64_t num_rows() const { return static_cast<int64_t>(vertex_of_row.size()); }
  /// DOT: one cluster per task, edges child -> parent.
  std::string to_dot(const GraphBatch& batch) const;
};

}  // namespace sylva
