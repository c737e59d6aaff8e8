// A convolution kernel that runs any valid mapping of a Timeloop CNN-layer
// problem on the CPU (issue: CoSA drives Sylva's own kernels). The mapping's
// loop nest -- every level's temporal loops in its permutation, then its
// spatial loops, from DRAM inwards -- is walked tile by tile; the innermost
// block (the Registers level's loops and the spatial loops under L1, i.e.
// the SIMD lanes) is one tile. Spatial loops above L1 over output
// dimensions (K, P, Q, N) run on threads (disjoint outputs); spatial loops
// over reduction dimensions (R, S, C) run in turn.
//
// float32 in an AVX-512 or AVX2+FMA build: L1's temporal loops are folded
// into the block (the block becomes L1's tile; the tiling above is kept,
// the order of L1's own loops is the micro-kernel's), and so are reduction
// loops right above it with no output loop between; the block runs on a
// register-tile micro-kernel (src/sched/cosa_microkernel.h) that keeps up
// to 24 accumulator vectors in registers over the block's whole reduction.
// It vectorises along K when the mapping puts the lanes on K (what
// cpu_mapspace asks for) -- over packed weights (K-blocked, pack_weights),
// the inputs broadcast where they are, the outputs accumulated as
// [N][P][Q][K] and transposed back, all inside the call; no copy at all in
// run_conv_channels_last) -- or along Q in
// the plain layouts when the lanes are on Q. float64, and builds without
// those instruction sets, run the block as a plain loop nest with Q
// innermost.
//
// Layouts (row-major): weights [K][C][R][S], inputs [N][C][W][H] with
// W = (P-1)·w_stride + (R-1)·w_dilation + 1 and H = (Q-1)·h_stride +
// (S-1)·h_dilation + 1 (R pairs with P, S with Q, as in Timeloop), outputs
// [N][K][P][Q].
//
// @code
// cosa::Result r = cosa::schedule(p, a, cosa::keep_everything(a));
// std::vector<float> out(cosa::output_size(p));
// cosa::run_conv(p, r.mapping, a, w.data(), in.data(), out.data());
// @endcode
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sylva/sched/cosa_spec.h"

namespace sylva::cosa {

/// Elements of each tensor in the layouts above.
int64_t weight_size(const Problem& p);
int64_t input_size(const Problem& p);
int64_t output_size(const Problem& p);
/// {W, H}: the input's extents.
std::array<int64_t, 2> input_extents(const Problem& p);

/// outputs = conv(weights, inputs) as mapping `m` of `a` lays the loops
/// out (check_mapping first: sylva::Error naming the level and dimension
/// of a bad one). `threads` <= 0: usable_cpu_cores(). float or double.
template <class T>
void run_conv(const Problem& p, const Mapping& m, const Arch& a, const T* weights, const T* inputs, T* outputs,
              int threads = 0);

/// A GEMM as the CNN-layer problem run_conv realises: C[m][n] = sum over
/// k of A[m][k]·B[k][n] is N = m (rows), K = n (columns), C = k (the
/// reduction), P = Q = R = S = 1. Its loops, mappings and model are the
/// convolution's. sylva::Error for a bound below 1.
Problem gemm_problem(int64_t m, int64_t n, int64_t k, const std::string& name = "gemm");
/// "64x640x256" (m x n x k) as gemm_problem(64, 640, 256, "gemm_64x640x256");
/// sylva::Error quoting the text otherwise.
Problem parse_gemm(const std::string& text);
/// Whether `p` is such a problem (P = Q = R = S = 1).
bool is_gemm(const Problem& p);

/// C = A·B, all row-major (A [m][k], B [k][n], C [m][n]), as mapping `m`
/// of `a` lays out the loops of gemm_problem(m, n, k). The float32 fast
/// path reads A and B where they are (B is already the channels-last
/// weights [C][K], A the channels-last inputs [N][C]) and writes C
/// directly; elsewhere B is transposed into run_conv's [K][C] weights.
/// sylva::Error if `p` is not a GEMM problem or the mapping is invalid.
template <class T>
void run_gemm(const Problem& p, const Mapping& m, const Arch& a, const T* A, const T* B, T* C, int threads = 0);

/// What run_conv's float32 path does with mapping `m`, priced in cycles
/// of one core: the blocks it runs and the micro-kernel calls in each
/// (planned as run_conv plans them), each call costing, per step of its
/// reduction, the larger of its vector FMAs and its loads (vectors plus
/// broadcasts) at two per cycle, plus loading and storing its
/// accumulators and 20 cycles; the blocks of the parallel loops' index
/// combinations shared out over `threads` (<= 0: usable_cpu_cores()), the
/// busiest thread's share counted. What the analytical model (evaluate)
/// leaves out: per-call and load-issue cost, and threads the mapping
/// cannot use. Where the build has no micro-kernel, or the mapping does
/// not take it: MACs over the threads used, micro_kernel false.
struct KernelEstimate {
  bool micro_kernel = false;
  int64_t blocks = 0;           // innermost blocks (tiles) in all
  int64_t calls_per_block = 0;  // micro-kernel calls per block
  int threads_used = 1;
  double cycles = 0;            // of the busiest thread
};
KernelEstimate estimate_kernel(const Problem& p, const Mapping& m, int threads = 0);

/// float32 weights also in the layout the micro-kernel reads when it
/// vectorises along K -- blocks of one vector's worth of output channels,
/// [K/W][C][R][S][W] with W the SIMD width, zero past K, so each vector's
/// stream over the reduction is sequential (as oneDNN's blocked OIhw16o)
/// -- made once: run_conv with them skips that copy on every call (as
/// oneDNN's blocked weights are reordered once for its convolutions).
/// Blocks whose K origin is not a multiple of W read a [C][R][S][K] copy,
/// made at the same time (so the weights are held twice). Keeps a pointer
/// to the plain weights for the mappings that read them (vectors along Q,
/// no micro-kernel): they must outlive it and not change.
struct PackedWeights {
  Problem problem;
  const float* plain = nullptr;
  std::vector<float> packed;   // [K/W][C][R][S][W]
  std::vector<float> k_major;  // [C][R][S][K]
};
PackedWeights pack_weights(const Problem& p, const float* weights, int threads = 0);
/// run_conv on packed weights (sylva::Error if they were packed for other bounds).
void run_conv(const Problem& p, const Mapping& m, const Arch& a, const PackedWeights& weights, const float* inputs,
              float* outputs, int threads = 0);

/// run_conv on channels-last data, as a network that keeps its activations
/// channels-last hands them over: inputs [N][W][H][C], outputs
/// [N][P][Q][K], the weights packed (pack_weights). The float32
/// micro-kernel then reads and writes them in place, vectors along K
/// whatever the mapping's lanes, with no copy at all -- the like-for-like
/// comparison with oneDNN's blocked or nhwc layouts, whose reorders are
/// made outside the convolution too. Builds without the micro-kernel
/// transpose to run_conv's layouts and back. sylva::Error as run_conv's.
void run_conv_channels_last(const Problem& p, const Mapping& m, const Arch& a, const PackedWeights& weights,
                            const float* inputs, float* outputs, int threads = 0);

/// Inputs [N][C][W][H] as [N][W][H][C], and outputs [N][P][Q][K] back as
/// [N][K][P][Q], for run_conv_channels_last's callers and tests.
void inputs_to_channels_last(const Problem& p, const float* nchw, float* nhwc, int threads = 0);
void outputs_from_channels_last(const Problem& p, const float* npqk, float* nkpq, int threads = 0);

/// The plain seven-loop convolution, for checking run_conv.
template <class T>
void reference_conv(const Problem& p, const T* weights, const T* inputs, T* outputs);

}  // namespace sylva::cosa
