// Internal: what both device engines (device_communicator.cc,
// nccl_communicator.cc) check before a collective.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "sylva/core/mat_view.h"
#include "sylva/dist/communicator.h"

namespace sylva::dist {

/// "f32[12] f64[1]", for the call check and errors.
std::string describe_buffers(std::span<const MatView> buffers);
/// sylva::Error unless every buffer is f32 or f64.
void check_buffers(std::span<const MatView> buffers, std::string_view engine);
/// Compares this rank's call (its name and buffers) with every other
/// rank's over `host` (an allgatherv); a difference is a sylva::Error on
/// every rank naming the first rank that differs and both calls.
void check_same_call(Communicator& host, std::span<const MatView> buffers, std::string_view what);

}  // namespace sylva::dist
