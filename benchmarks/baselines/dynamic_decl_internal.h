// Internal to the dynamic-declaration engine: what its forward
// (dynamic_decl.cc) and backward (dynamic_decl_backward.cc) share.
#pragma once

#include <chrono>

#include "dynamic_decl.h"

namespace sylva::bench::dd {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Element k of a flat [n, 1] view: indices for the device's gathers and
// scatters, which move elements of values that need not start on a row.
inline MatView elements(Buffer& b, int64_t n, DType dtype) { return {b.data(), n, 1, dtype}; }

}  // namespace sylva::bench::dd
