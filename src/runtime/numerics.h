// Internal: ExecutorOptions::check_numerics -- find the first NaN or
// infinity an op wrote and say where it came from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/ir/graph.h"

namespace sylva::detail {

/// Where a value was computed, for the message.
struct NumericsSite {
  const char* pass = "forward";  // "forward" | "backward"
  std::string graph;             // e.g. "vertex function 'cell'", "the program"
  uint64_t step = 0;
};

/// Index (row-major) of the first NaN or infinity of `v`, -1 if there is
/// none or `v` is not floating point. Device memory is read through
/// backend.download into `scratch`.
int64_t first_non_finite(Backend& backend, const MatView& v, std::vector<char>& scratch);

/// Throws a sylva::Error if `v`, the value node `n` just wrote, holds a NaN
/// or an infinity: it names the value, the pass, the graph, the node and
/// its op, the step and, through `describe_row` (empty: rows are not
/// vertices), the vertex and sample of the first bad row.
void check_finite(Backend& backend, const MatView& v, const ir::Node& n, const NumericsSite& site,
                  const std::function<std::string(int64_t row)>& describe_row, std::vector<char>& scratch);

}  // namespace sylva::detail
