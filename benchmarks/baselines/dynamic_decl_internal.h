// Internal to the dynamic-declaration engine: what its forward
// (dynamic_decl.cc) and backward (dynamic_decl_backward.cc) share.
#pragma once

#include <chrono>

#include "dynamic_decl.h"

namespace sylva::bench::dd {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace sylva::bench::dd
