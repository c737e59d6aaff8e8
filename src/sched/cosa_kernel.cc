#include "sylva/sched/cosa_kernel.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cosa_layouts.h"
#include "cosa_microkernel.h"
#include "sylva/core/device.h"
#include "sylva/core/error.h"

namespace sylva::cosa {
namespace {

using detail::kKBlock;
using detail::k_blocked_size;
using detail::pack_k_blocked;
using detail::pack_k_major;
using detail::transpose;

struct Loop {
  int dim = 0;
  int64_t factor = 1;
  int64_t stride = 1;     // index step of `dim` per iteration: the product of the inner loops' factors of `dim`
  bool parallel = false;  // a spatial loop above L1 over an output dimension: run on threads
};

// The mapping's loop nest, outermost first, and where the innermost block
// (the Registers level's loops and the spatial loops under L1) begins.
struct Nest {
  std::vector<Loop> loops;
  size_t inner_begin = 0;
  size_t l1_begin = 0;                                   // where L1's temporal loops begin
  std::array<int64_t, kDims> tile{1, 1, 1, 1, 1, 1, 1};  // the innermost block's extent per dimension
};

// The block's extent: the product of the factors from inner_begin in.
std::array<int64_t, kDims> tile_of(const Nest& n) {
  std::array<int64_t, kDims> tile{1, 1, 1, 1, 1, 1, 1};
  for (size_t l = n.inner_begin; l < n.loops.size(); ++l) tile[static_cast<size_t>(n.loops[l].dim)] *= n.loops[l].factor;
  return tile;
}

bool output_dim(int d) { return d == K || d == P || d == Q || d == N; }

Nest nest_of(const Mapping& m) {
  Nest n;
  const int levels = static_cast<int>(m.levels.size());
  for (int i = levels - 1; i >= 0; --i) {
    const LevelMapping& lm = m.levels[static_cast<size_t>(i)];
    if (i == 1) n.l1_begin = n.loops.size();
    for (int d : loops_outer_first(lm.temporal_permutation))
      if (lm.temporal[static_cast<size_t>(d)] > 1) n.loops.push_back({d, lm.temporal[static_cast<size_t>(d)]});
    if (i == 1 || (i == 0 && levels == 1)) n.inner_begin = n.loops.size();
    for (int d : loops_outer_first(lm.spatial_permutation))
      if (lm.spatial[static_cast<size_t>(d)] > 1)
        n.loops.push_back({d, lm.spatial[static_cast<size_t>(d)], 1, i >= 2 && output_dim(d)});
  }
  if (levels == 1) n.l1_begin = n.inner_begin;
  std::array<int64_t, kDims> inner{1, 1, 1, 1, 1, 1, 1};
  for (size_t l = n.loops.size(); l-- > 0;) {
    Loop& loop = n.loops[l];
    loop.stride = inner[static_cast<size_t>(loop.dim)];
    inner[static_cast<size_t>(loop.dim)] *= loop.factor;
  }
  n.tile = tile_of(n);
  return n;
}

// The nest with L1's temporal loops folded into the block, for the
// micro-kernel: the block becomes L1's tile, which the mapping's capacity
// check says fits L1, and the micro-kernel orders the points inside it
// (each group of accumulators over the tile's whole reduction) instead of
// storing and reloading its accumulators at every step of L1's loops.
//
// Reduction loops (R, S, C) directly above that tile, with no output loop
// between, are folded in too: they only walk the same outputs through
// further reduction chunks, each of which would reload and store the
// block's accumulators; inside the block the micro-kernel carries them
// in registers over the whole run, streaming the longer operand runs from
// the cache level the mapping put them in. The tiling above is kept.
Nest fold_l1(Nest n) {
  n.inner_begin = n.l1_begin;
  while (n.inner_begin > 0 && !output_dim(n.loops[n.inner_begin - 1].dim) && !n.loops[n.inner_begin - 1].parallel)
    --n.inner_begin;
  n.tile = tile_of(n);
  return n;
}

template <class T>
struct Conv {
  const Problem& p;
  const T* w;
  const T* in;
  T* out;
  int64_t wi, hi;  // input extents

  // One block of the iteration space: [b, b + e) in every dimension.
  void tile(const std::array<int64_t, kDims>& b, const std::array<int64_t, kDims>& e) const {
    const auto& B = p.bounds;
    for (int64_t n = b[N]; n < b[N] + e[N]; ++n)
      for (int64_t k = b[K]; k < b[K] + e[K]; ++k)
        for (int64_t c = b[C]; c < b[C] + e[C]; ++c)
          for (int64_t r = b[R]; r < b[R] + e[R]; ++r)
            for (int64_t s = b[S]; s < b[S] + e[S]; ++s) {
              const T wv = w[((k * B[C] + c) * B[R] + r) * B[S] + s];
              for (int64_t pp = b[P]; pp < b[P] + e[P]; ++pp) {
                T* o = out + ((n * B[K] + k) * B[P] + pp) * B[Q];
                const T* x = in + ((n * B[C] + c) * wi + pp * p.w_stride + r * p.w_dilation) * hi + s * p.h_dilation;
                const int64_t hs = p.h_stride;
                for (int64_t q = b[Q]; q < b[Q] + e[Q]; ++q) o[q] += wv * x[q * hs];
              }
            }
  }
};

// The innermost block through the register-tile micro-kernel
// (cosa_microkernel.h; float32 in a SIMD build). The block's points are
// the mapping's; how they are vectorised is the kernel's choice: along the
// dimension the mapping spreads over the SIMD lanes if that is K or Q,
// else along the longer of the block's K and Q extents. Along K (what
// cpu_mapspace asks for), a vector is W output channels of one output
// point, times one broadcast input; the kernel then works channels-last:
// weights packed in blocks of W output channels, [K/W][C][R][S][W] (or
// [C][R][S][K] where the blocks do not start at multiples of W), inputs
// broadcast where they are ([N][C][W][H] in run_conv, [N][W][H][C] in
// run_conv_channels_last), outputs accumulated as [N][P][Q][K] and
// transposed back at the end (inside run_conv's time). Along Q, a vector
// is W consecutive outputs of one row and the input row under them (lanes h_stride apart, gathered when > 1),
// times one broadcast weight per output channel, in the plain layouts.
struct FastConv {
  bool along_k = false;
  const float* in = nullptr;
  const float* w = nullptr;
  float* out = nullptr;
  int64_t kblock = 0;  // along K: the weights as [K/kblock][C][R][S][kblock] (0: [C][R][S][K])
  bool in_nchw = false;  // along K: the inputs read where they are, [N][C][W][H] (else [N][W][H][C])
  std::vector<float> packed_w;
  std::unique_ptr<float[]> staged_out;  // left uninitialised: written whole before it is read
  std::vector<int64_t> vrel, ov, srel, os;  // vector and scalar items, relative to the block's origin
  std::vector<int> lanes;
  std::vector<detail::RedOffset> outer;  // the block's (R, S) points; C runs inside with the steps below
  int64_t inner = 1, vstep = 0, sstep = 0;
  int64_t olane = 1, vlane = 1;
  struct Call {
    detail::MicroFn fn;
    size_t v0, s0;
  };
  std::vector<Call> calls;  // the block as micro-kernel calls
  const Problem* p = nullptr;
  int64_t wi = 0, hi = 0;

  void tile(const std::array<int64_t, kDims>& b, const std::array<int64_t, kDims>& /*e*/) const;
  void call(const float* vbase, const float* sbase, float* o, bool fresh) const;
};

// One micro-kernel call of a block: vector items [v0, v0 + vn), scalar items [s0, s0 + sn).
struct CallShape {
  int64_t v0, vn, s0, sn;
};

// A block of `vectors` x `scalars` items as micro-kernel calls: the fewest
// that hold them (at most kMaxVectors vectors, max_scalars of them scalars
// each), the items shared out as evenly as possible (7 scalars by 6 are
// 4 + 3, not 6 + 1: a call of one broadcast does as many loads as FMAs).
std::vector<CallShape> plan_calls(int64_t vectors, int64_t scalars) {
  const auto even = [](int64_t n, int64_t most) {
    std::vector<int64_t> sizes(static_cast<size_t>((n + most - 1) / most));
    const auto k = static_cast<int64_t>(sizes.size());
    for (int64_t i = 0; i < k; ++i) sizes[static_cast<size_t>(i)] = n / k + (i < n % k ? 1 : 0);
    return sizes;
  };
  std::vector<CallShape> calls;
  int64_t v0 = 0;
  for (int64_t vn : even(vectors, detail::kMaxVectors)) {
    int64_t s0 = 0;
    for (int64_t sn : even(scalars, detail::max_scalars(static_cast<int>(vn)))) {
      calls.push_back({v0, vn, s0, sn});
      s0 += sn;
    }
    v0 += vn;
  }
  return calls;
}

// Whether the micro-kernel can take the blocks of `nest`, and along which dimension.
bool fast_along_k(const Problem& p, const Mapping& m, const Nest& nest, bool& along_k) {
  if (detail::kSimdWidth == 0) return false;
  const auto& lanes = m.levels.size() > 1 ? m.levels[1].spatial : std::array<int64_t, kDims>{1, 1, 1, 1, 1, 1, 1};
  along_k = lanes[K] > 1 || lanes[Q] > 1 ? lanes[K] >= lanes[Q] : nest.tile[K] >= nest.tile[Q];
  return along_k || p.h_stride * detail::kSimdWidth < (int64_t{1} << 31);  // gathered lanes: int32 offsets
}

// Items of `extent` along the vector dimension in chunks of the SIMD width.
void add_vector_items(FastConv& f, int64_t extent, int64_t v_off, int64_t o_off, int64_t v_step, int64_t o_step) {
  const int64_t W = detail::kSimdWidth;
  for (int64_t i = 0; i < extent; i += W) {
    f.vrel.push_back(v_off + i * v_step);
    f.ov.push_back(o_off + i * o_step);
    f.lanes.push_back(static_cast<int>(std::min(W, extent - i)));
  }
}

// Whether every block of `nest` starts at a multiple of kKBlock along K
// (its K extent is a multiple of it, or the whole of K): then its vectors
// are whole blocks of the K-blocked weights.
bool k_blocks_align(const Problem& p, const Nest& nest) {
  return nest.tile[K] % kKBlock == 0 || nest.tile[K] >= p.bounds[K];
}

// Sets the weights the along-K kernel reads: pack_weights' copies where
// given (K-blocked where the blocks align with it, else [C][R][S][K]),
// otherwise the same made now from the plain `w`.
void choose_k_weights(FastConv& f, const Problem& p, const Nest& nest, const float* w, const PackedWeights* packed,
                      int threads) {
  const bool blocked = k_blocks_align(p, nest);
  f.kblock = blocked ? kKBlock : 0;
  if (packed) {
    f.w = blocked ? packed->packed.data() : packed->k_major.data();
    return;
  }
  f.packed_w.resize(static_cast<size_t>(blocked ? k_blocked_size(p) : weight_size(p)));
  (blocked ? pack_k_blocked : pack_k_major)(p, w, f.packed_w.data(), threads);
  f.w = f.packed_w.data();
}

// Sizes the [N][P][Q][K] outputs. The inputs stay [N][C][W][H]: the
// kernel only broadcasts them, and a broadcast reads any address, so a
// step of C is a step of one plane instead of one float (no copy).
void stage_outputs(FastConv& f, const Problem& p) {
  f.staged_out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(output_size(p)));
  f.out = f.staged_out.get();
  f.in_nchw = true;
}

// What fast_conv is handed along K: `nchw`, run_conv's layouts (inputs
// read in place, outputs staged as [N][P][Q][K]); `channels_last`, inputs [N][W][H][C] and outputs
// [N][P][Q][K] used in place; `gemm`, a GEMM's A, C and its B as
// [C][K] weights, all in place. Along Q the plain layouts are read.
enum class Layouts { nchw, channels_last, gemm };

// `packed`: the weights as pack_weights made them (null: none). The
// outputs need not be zeroed: each block's first visit writes them.
FastConv fast_conv(const Problem& p, const Nest& nest, bool along_k, const float* w, const float* in, float* out,
                   int64_t wi, int64_t hi, int threads, Layouts layouts, const PackedWeights* packed = nullptr) {
  const auto& B = p.bounds;
  const auto& e = nest.tile;
  FastConv f;
  f.along_k = along_k;
  f.in = in;
  f.w = w;
  f.out = out;
  f.p = &p;
  f.wi = wi;
  f.hi = hi;
  if (along_k && layouts != Layouts::gemm) choose_k_weights(f, p, nest, w, packed, threads);
  if (along_k && layouts == Layouts::nchw) stage_outputs(f, p);
  const int64_t cstep = f.in_nchw ? wi * hi : 1, pixel = f.in_nchw ? 1 : B[C];  // along K: the inputs' strides
  const int64_t kpoint = f.kblock > 0 ? f.kblock : B[K];  // along K: the weights' step per reduction point
  for (int64_t r = 0; r < e[R]; ++r)
    for (int64_t s = 0; s < e[S]; ++s)
      f.outer.push_back(along_k ? detail::RedOffset{(r * B[S] + s) * kpoint, (r * p.w_dilation * hi + s * p.h_dilation) * pixel}
                                : detail::RedOffset{r * p.w_dilation * hi + s * p.h_dilation, r * B[S] + s});
  f.inner = e[C];
  f.vstep = along_k ? B[R] * B[S] * kpoint : wi * hi;  // one step of C
  f.sstep = along_k ? cstep : B[R] * B[S];
  if (along_k) {
    // K-blocked, the vector at channel offset i (a multiple of W) starts block i / W: i·C·R·S floats on.
    add_vector_items(f, e[K], 0, 0, f.kblock > 0 ? B[C] * B[R] * B[S] : 1, 1);
    for (int64_t n = 0; n < e[N]; ++n)
      for (int64_t x = 0; x < e[P]; ++x)
        for (int64_t y = 0; y < e[Q]; ++y) {
          f.srel.push_back(n * B[C] * wi * hi + (x * p.w_stride * hi + y * p.h_stride) * pixel);
          f.os.push_back(((n * B[P] + x) * B[Q] + y) * B[K]);
        }
  } else {
    for (int64_t n = 0; n < e[N]; ++n)
      for (int64_t x = 0; x < e[P]; ++x)
        add_vector_items(f, e[Q], (n * B[C] * wi + x * p.w_stride) * hi, (n * B[K] * B[P] + x) * B[Q], p.h_stride, 1);
    for (int64_t k = 0; k < e[K]; ++k) {
      f.srel.push_back(k * B[C] * B[R] * B[S]);
      f.os.push_back(k * B[P] * B[Q]);
    }
    f.vlane = p.h_stride;
  }
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  for (const CallShape& c : plan_calls(static_cast<int64_t>(f.vrel.size()), static_cast<int64_t>(f.srel.size())))
    f.calls.push_back({detail::micro_table[static_cast<size_t>(c.vn - 1)][static_cast<size_t>(c.sn - 1)],
                       static_cast<size_t>(c.v0), static_cast<size_t>(c.s0)});
#endif
  return f;
}

// Outputs [N][P][Q][K] back to [N][K][P][Q].
void unstage(const Problem& p, const float* staged, float* out, int threads) {
  const auto& B = p.bounds;
  transpose(staged, out, B[N], B[P] * B[Q], B[K], threads);
}

void FastConv::tile(const std::array<int64_t, kDims>& b, const std::array<int64_t, kDims>& /*e*/) const {
  const auto& B = p->bounds;
  const int64_t x0 = b[P] * p->w_stride + b[R] * p->w_dilation, y0 = b[Q] * p->h_stride + b[S] * p->h_dilation;
  // The reduction's loops run inside the output's, in odometer order, so
  // an output tile's first visit is the one at reduction origin 0.
  const bool fresh = b[C] == 0 && b[R] == 0 && b[S] == 0;
  if (along_k) {
    const int64_t in_origin = in_nchw ? ((b[N] * B[C] + b[C]) * wi + x0) * hi + y0 : ((b[N] * wi + x0) * hi + y0) * B[C] + b[C];
    const int64_t point = (b[C] * B[R] + b[R]) * B[S] + b[S];
    const int64_t w_origin = kblock > 0 ? b[K] * B[C] * B[R] * B[S] + point * kblock : point * B[K] + b[K];
    call(w + w_origin, in + in_origin, out + ((b[N] * B[P] + b[P]) * B[Q] + b[Q]) * B[K] + b[K], fresh);
  } else {
    const int64_t in_origin = ((b[N] * B[C] + b[C]) * wi + x0) * hi + y0;
    const int64_t w_origin = ((b[K] * B[C] + b[C]) * B[R] + b[R]) * B[S] + b[S];
    call(in + in_origin, w + w_origin, out + ((b[N] * B[K] + b[K]) * B[P] + b[P]) * B[Q] + b[Q], fresh);
  }
}

// The block as the planned micro-kernel calls.
void FastConv::call(const float* vbase, const float* sbase, float* o, bool fresh) const {
  detail::MicroCall c;
  c.fresh = fresh;
  c.vbase = vbase;
  c.sbase = sbase;
  c.out = o;
  c.olane = olane;
  c.vlane = vlane;
  c.outer = outer.data();
  c.nouter = static_cast<int64_t>(outer.size());
  c.inner = inner;
  c.vstep = vstep;
  c.sstep = sstep;
  for (const Call& k : calls) {
    c.vrel = vrel.data() + k.v0;
    c.ov = ov.data() + k.v0;
    c.lanes = lanes.data() + k.v0;
    c.srel = srel.data() + k.s0;
    c.os = os.data() + k.s0;
    k.fn(c);
  }
}

// Runs the loops of `nest` outside the innermost block in order, the
// parallel ones fixed at the indices `combo` encodes.
template <class Block>
void run_outer(const Block& conv, const Nest& nest, const std::vector<size_t>& par, const std::vector<size_t>& seq,
               int64_t combo) {
  std::array<int64_t, kDims> base{};
  for (size_t j = par.size(); j-- > 0;) {
    const Loop& l = nest.loops[par[j]];
    base[static_cast<size_t>(l.dim)] += (combo % l.factor) * l.stride;
    combo /= l.factor;
  }
  std::vector<int64_t> idx(seq.size(), 0);
  for (;;) {
    std::array<int64_t, kDims> b = base;
    for (size_t j = 0; j < seq.size(); ++j) {
      const Loop& l = nest.loops[seq[j]];
      b[static_cast<size_t>(l.dim)] += idx[j] * l.stride;
    }
    conv.tile(b, nest.tile);
    size_t j = seq.size();  // odometer: the innermost sequential loop moves first
    while (j > 0 && ++idx[j - 1] == nest.loops[seq[j - 1]].factor) idx[--j] = 0;
    if (j == 0) return;
  }
}

}  // namespace

// Runs `block` over every tile of `nest`: the parallel loops outside the
// block on `threads` threads, the rest in order on each.
template <class Block>
void run_tiles(const Block& block, const Nest& nest, int threads) {
  std::vector<size_t> par, seq;
  int64_t combos = 1;
  for (size_t l = 0; l < nest.inner_begin; ++l) {
    (nest.loops[l].parallel ? par : seq).push_back(l);
    if (nest.loops[l].parallel) combos *= nest.loops[l].factor;
  }
  const int t = static_cast<int>(std::min<int64_t>(threads, combos));
#pragma omp parallel for num_threads(t) schedule(dynamic) if (t > 1)
  for (int64_t c = 0; c < combos; ++c) run_outer(block, nest, par, seq, c);
}

KernelEstimate estimate_kernel(const Problem& p, const Mapping& m, int threads) {
  const Nest folded = fold_l1(nest_of(m));
  const int all = threads > 0 ? threads : usable_cpu_cores();
  int64_t combos = 1, sequential = 1;
  for (size_t l = 0; l < folded.inner_begin; ++l)
    (folded.loops[l].parallel ? combos : sequential) *= folded.loops[l].factor;
  KernelEstimate k;
  k.blocks = combos * sequential;
  k.threads_used = static_cast<int>(std::min<int64_t>(all, combos));
  const int64_t rounds = (combos + k.threads_used - 1) / k.threads_used;  // blocks of the busiest thread / sequential
  const auto& e = folded.tile;
  bool along_k = false;
  if (!fast_along_k(p, m, folded, along_k)) {
    k.cycles = static_cast<double>(rounds * sequential * e[R] * e[S] * e[C] * e[K] * e[N] * e[P] * e[Q]);
    return k;
  }
  k.micro_kernel = true;
  const int64_t W = std::max(detail::kSimdWidth, 1);  // never 0 here (fast_along_k); a build without SIMD would warn
  const int64_t vectors = along_k ? (e[K] + W - 1) / W : e[N] * e[P] * ((e[Q] + W - 1) / W);
  const int64_t scalars = along_k ? e[N] * e[P] * e[Q] : e[K];
  const double steps = static_cast<double>(e[R] * e[S] * e[C]);
  double block = 0;
  for (const CallShape& c : plan_calls(vectors, scalars)) {
    const double fma = static_cast<double>(c.vn * c.sn), loads = static_cast<double>(c.vn + c.sn);
    block += steps * std::max(fma, loads) / 2 + 1.5 * fma + 20;  // accumulators: loads at 2, stores at 1 per cycle
    ++k.calls_per_block;
  }
  k.cycles = static_cast<double>(rounds * sequential) * block;
  return k;
}

namespace {
// run_conv, with pack_weights' copies where `packed` is given (float32 only).
template <class T>
void run_conv_packed(const Problem& p, const Mapping& m, const Arch& a, const T* weights, const PackedWeights* packed,
                     const T* inputs, T* outputs, int threads) {
  check_mapping(m, p, a);
  const Nest nest = nest_of(m);
  const auto e = input_extents(p);
  const int all = threads > 0 ? threads : usable_cpu_cores();
  if constexpr (std::is_same_v<T, float>) {
    const Nest folded = fold_l1(nest);
    bool along_k = false;
    if (fast_along_k(p, m, folded, along_k)) {  // writes every output on its first visit: no zeroing
      const FastConv f = fast_conv(p, folded, along_k, weights, inputs, outputs, e[0], e[1], all, Layouts::nchw, packed);
      run_tiles(f, folded, all);
      if (along_k) unstage(p, f.staged_out.get(), outputs, all);
      return;
    }
  }
  std::fill(outputs, outputs + output_size(p), T(0));
  run_tiles(Conv<T>{p, weights, inputs, outputs, e[0], e[1]}, nest, all);
}
}  // namespace

template <class T>
void run_conv(const Problem& p, const Mapping& m, const Arch& a, const T* weights, const T* inputs, T* outputs,
              int threads) {
  run_conv_packed<T>(p, m, a, weights, nullptr, inputs, outputs, threads);
}

namespace {
void check_packed(const Problem& p, const PackedWeights& w, const char* what) {
  SYLVA_CHECK(w.problem.bounds == p.bounds && static_cast<int64_t>(w.packed.size()) == k_blocked_size(p) &&
                  static_cast<int64_t>(w.k_major.size()) == weight_size(p),
              "[cosa] ", what, ": weights packed for '", w.problem.name, "' used for '", p.name,
              "', whose bounds differ");
}
}  // namespace

void run_conv(const Problem& p, const Mapping& m, const Arch& a, const PackedWeights& w, const float* inputs,
              float* outputs, int threads) {
  check_packed(p, w, "run_conv");
  run_conv_packed<float>(p, m, a, w.plain, &w, inputs, outputs, threads);
}

void outputs_from_channels_last(const Problem& p, const float* npqk, float* nkpq, int threads) {
  unstage(p, npqk, nkpq, threads > 0 ? threads : usable_cpu_cores());
}

void run_conv_channels_last(const Problem& p, const Mapping& m, const Arch& a, const PackedWeights& w,
                            const float* inputs, float* outputs, int threads) {
  check_packed(p, w, "run_conv_channels_last");
  const int all = threads > 0 ? threads : usable_cpu_cores();
  if constexpr (detail::kSimdWidth > 0) {
    check_mapping(m, p, a);
    const Nest folded = fold_l1(nest_of(m));
    const auto e = input_extents(p);
    run_tiles(fast_conv(p, folded, /*along_k=*/true, w.plain, inputs, outputs, e[0], e[1], all, Layouts::channels_last,
                        &w),
              folded, all);
  } else {
    std::vector<float> in(static_cast<size_t>(input_size(p))), out(static_cast<size_t>(output_size(p)));
    const auto e = input_extents(p);
    transpose(inputs, in.data(), p.bounds[N], e[0] * e[1], p.bounds[C], all);  // [N][WH][C] -> [N][C][WH]
    run_conv(p, m, a, w, in.data(), out.data(), all);
    transpose(out.data(), outputs, p.bounds[N], p.bounds[K], p.bounds[P] * p.bounds[Q], all);
  }
}

template <class T>
void run_gemm(const Problem& p, const Mapping& m, const Arch& a, const T* lhs, const T* rhs, T* out, int threads) {
  SYLVA_CHECK(is_gemm(p), "[cosa] run_gemm: problem '", p.name, "' is not a GEMM (P, Q, R, S = ", p.bounds[P], ", ",
              p.bounds[Q], ", ", p.bounds[R], ", ", p.bounds[S], "; gemm_problem makes them 1)");
  const auto& b = p.bounds;
  if constexpr (std::is_same_v<T, float>) {
    check_mapping(m, p, a);
    const Nest folded = fold_l1(nest_of(m));
    bool along_k = false;
    if (fast_along_k(p, m, folded, along_k) && along_k) {  // Q = 1: along K whenever the fast path runs
      const int all = threads > 0 ? threads : usable_cpu_cores();
      run_tiles(fast_conv(p, folded, true, rhs, lhs, out, 1, 1, all, Layouts::gemm), folded, all);
      return;
    }
  }
  std::vector<T> bt(static_cast<size_t>(b[K] * b[C]));  // B [k][n] as the weights [K][C]
  for (int64_t c = 0; c < b[C]; ++c)
    for (int64_t k = 0; k < b[K]; ++k) bt[static_cast<size_t>(k * b[C] + c)] = rhs[c * b[K] + k];
  run_conv(p, m, a, bt.data(), lhs, out, threads);
}

template void run_conv<float>(const Problem&, const Mapping&, const Arch&, const float*, const float*, float*, int);
template void run_conv<double>(const Problem&, const Mapping&, const Arch&, const double*, const double*, double*,
                               int);
template void run_gemm<float>(const Problem&, const Mapping&, const Arch&, const float*, const float*, float*, int);
template void run_gemm<double>(const Problem&, const Mapping&, const Arch&, const double*, const double*, double*,
                               int);

}  // namespace sylva::cosa
