// Tensor layouts of cosa_kernel (internal to sylva_sched): the cache-
// blocked transposition its channels-last copies use and the two layouts
// of packed weights.
#pragma once

#include <cstdint>

#include "cosa_microkernel.h"
#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa::detail {

/// dst[b][c][r] = src[b][r][c] for `batches` matrices of rows x cols, in
/// square tiles small enough for L1 (a plain loop over a large matrix
/// strides through memory on one side and misses on every element), the
/// tiles shared out over `threads`.
void transpose(const float* src, float* dst, int64_t batches, int64_t rows, int64_t cols, int threads);

/// The output channels of one block of K-blocked weights: a vector's worth.
constexpr int64_t kKBlock = kSimdWidth > 0 ? kSimdWidth : 1;
/// Floats of the K-blocked weights ([K/W][C][R][S][W], K padded to W).
int64_t k_blocked_size(const Problem& p);
/// Weights [K][C][R][S] as [K/W][C][R][S][W] (W = kKBlock), zero past K:
/// a vector of W output channels reads one contiguous run per reduction
/// point, so its stream over C is sequential. In [C][R][S][K] it jumps
/// R·S·K floats a step -- across a page every step or two on the wide
/// layers, where the hardware prefetchers stop (ResNet-50's 1x1 stride-2
/// layer with C = 1024 and K = 2048, CoSA's mapping on channels-last data,
/// two cores: 74 -> 87 GFLOP/s).
void pack_k_blocked(const Problem& p, const float* w, float* out, int threads);
/// Weights [K][C][R][S] as [C][R][S][K].
void pack_k_major(const Problem& p, const float* w, float* out, int threads);

}  // namespace sylva::cosa::detail
