#include "sylva/sched/cosa_gpu_kernel.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "sylva/core/error.h"
#include "sylva/core/hash.h"
#include "sylva/sched/cosa_conv_template.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"

// The template's host build: what emulate_gpu_conv runs (the NVRTC build
// gets the same text from cosa_conv_template.h).
#define SYLVA_COSA_HD inline
#include "cosa_conv.cuh"  // kernels/templates, on sylva_cosa's include path
#undef SYLVA_COSA_HD

namespace sylva::cosa {
namespace {

constexpr int kRegs = 0, kSmem = 1, kL2 = 2, kDram = 3;

bool output_dim(int d) { return d == K || d == P || d == Q || d == N; }

std::string loops_text(const std::vector<GpuLoop>& loops) {
  if (loops.empty()) return "-";
  std::string s;
  for (const GpuLoop& l : loops)
    s += (s.empty() ? "" : " ") + std::string(1, kDimNames[static_cast<size_t>(l.dim)]) + std::to_string(l.factor);
  return s;
}

std::string extents_text(const std::array<int64_t, kDims>& e) {
  std::string s;
  for (int d = 0; d < kDims; ++d)
    if (e[static_cast<size_t>(d)] > 1)
      s += (s.empty() ? "" : " ") + std::string(1, kDimNames[static_cast<size_t>(d)]) +
           std::to_string(e[static_cast<size_t>(d)]);
  return s.empty() ? "1" : s;
}

int64_t product(const std::vector<GpuLoop>& loops) {
  int64_t n = 1;
  for (const GpuLoop& l : loops) n *= l.factor;
  return n;
}

sylva_cosa::Loops device_loops(const std::vector<GpuLoop>& loops) {
  sylva_cosa::Loops l{};
  l.count = static_cast<int>(loops.size());
  for (size_t i = 0; i < loops.size(); ++i) {
    l.dim[i] = loops[i].dim;
    l.factor[i] = static_cast<int>(loops[i].factor);
    l.stride[i] = static_cast<int>(loops[i].stride);
  }
  return l;
}

// The plan as the template's struct (gpu_conv_plan checked every value fits an int).
sylva_cosa::ConvPlan device_plan(const GpuConvPlan& g) {
  const Problem& p = g.problem;
  sylva_cosa::ConvPlan c{};
  const auto [wi, hi] = input_extents(p);
  for (int d = 0; d < kDims; ++d) {
    c.bounds[d] = static_cast<int>(p.bounds[static_cast<size_t>(d)]);
    c.tile[d] = static_cast<int>(g.tile[static_cast<size_t>(d)]);
    c.reg[d] = static_cast<int>(g.reg[static_cast<size_t>(d)]);
  }
  c.w_stride = static_cast<int>(p.w_stride);
  c.h_stride = static_cast<int>(p.h_stride);
  c.w_dilation = static_cast<int>(p.w_dilation);
  c.h_dilation = static_cast<int>(p.h_dilation);
  c.wi = static_cast<int>(wi);
  c.hi = static_cast<int>(hi);
  c.outer = device_loops(g.outer);
  c.grid = device_loops(g.grid);
  c.threads = device_loops(g.threads);
  c.out_steps = device_loops(g.out_steps);
  c.red_steps = device_loops(g.red_steps);
  c.stage_w = g.stage_weights;
  c.stage_in = g.stage_inputs;
  c.atomic = g.atomic;
  c.tile_wi = static_cast<int>(g.tile_input[0]);
  c.tile_hi = static_cast<int>(g.tile_input[1]);
  c.smem_w = static_cast<int>(g.smem_weights);
  c.smem_in = static_cast<int>(g.smem_inputs);
  return c;
}

std::string ints(const int* v, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

std::string loops_init(const sylva_cosa::Loops& l) {
  const int n = std::max(1, l.count);
  return "{" + std::to_string(l.count) + ", " + ints(l.dim, n) + ", " + ints(l.factor, n) + ", " + ints(l.stride, n) +
         "}";
}

}  // namespace

Mapspace gpu_mapspace(const Arch& a) {
  Mapspace ms = keep_everything(a);
  ms.keep[static_cast<size_t>(a.level("Registers"))] = {false, false, true};
  ms.keep[static_cast<size_t>(a.level("SharedMemory"))] = {true, true, false};
  return ms;
}

GpuConvPlan gpu_conv_plan(const Problem& p, const Mapping& m, const Arch& a) {
  check_mapping(m, p, a);
  const bool gpu_levels = a.levels.size() == 4 && a.levels[kRegs].name == "Registers" &&
                          a.levels[kSmem].name == "SharedMemory" && a.levels[kL2].name == "L2" && a.levels[kDram].dram;
  SYLVA_CHECK(gpu_levels, "[cosa] gpu kernel: architecture '", a.name,
              "' is not gpu_arch's levels (Registers, SharedMemory, L2, DRAM)");
  GpuConvPlan g;
  g.problem = p;
  // The nest outermost first, each level's temporal loops then its spatial
  // ones; a loop's stride is the product of the inner factors of its dimension.
  struct Placed {
    GpuLoop loop;
    int level;
    bool spatial;
  };
  std::vector<Placed> nest;
  for (int i = kDram; i >= kRegs; --i) {
    const LevelMapping& lm = m.levels[static_cast<size_t>(i)];
    for (const bool spatial : {false, true})
      for (int d : loops_outer_first(spatial ? lm.spatial_permutation : lm.temporal_permutation)) {
        const int64_t f = (spatial ? lm.spatial : lm.temporal)[static_cast<size_t>(d)];
        if (f > 1) nest.push_back({{d, f, 1}, i, spatial});
      }
  }
  std::array<int64_t, kDims> inner{1, 1, 1, 1, 1, 1, 1};
  for (size_t l = nest.size(); l-- > 0;) {
    GpuLoop& loop = nest[l].loop;
    loop.stride = inner[static_cast<size_t>(loop.dim)];
    inner[static_cast<size_t>(loop.dim)] *= loop.factor;
  }
  g.tile.fill(1);
  g.reg.fill(1);
  for (const Placed& x : nest) {
    const auto d = static_cast<size_t>(x.loop.dim);
    if (x.level == kRegs) g.reg[d] *= x.loop.factor;  // fan-out 1 under Registers: check_mapping allows no spatial loop
    if (x.level <= kSmem) g.tile[d] *= x.loop.factor;
    if (x.level >= kL2 && !x.spatial) g.outer.push_back(x.loop);
    else if (x.level == kL2) g.grid.push_back(x.loop);
    else if (x.level == kSmem && x.spatial) g.threads.push_back(x.loop);
    else if (x.level == kSmem) (output_dim(x.loop.dim) ? g.out_steps : g.red_steps).push_back(x.loop);
  }
  const auto split = [](const std::vector<GpuLoop>& loops) {
    return std::any_of(loops.begin(), loops.end(), [](const GpuLoop& l) { return !output_dim(l.dim); });
  };
  g.atomic = split(g.grid) || split(g.threads);
  g.blocks = product(g.grid);
  g.threads_per_block = product(g.threads);
  g.accumulators = g.reg[K] * g.reg[P] * g.reg[Q] * g.reg[N];
  const auto& t = g.tile;
  g.tile_input = {(t[P] - 1) * p.w_stride + (t[R] - 1) * p.w_dilation + 1,
                  (t[Q] - 1) * p.h_stride + (t[S] - 1) * p.h_dilation + 1};
  const LevelMapping& sm = m.levels[kSmem];
  g.stage_weights = sm.keep[Weights];
  g.stage_inputs = sm.keep[Inputs];
  if (g.stage_weights) g.smem_weights = t[K] * t[C] * t[R] * t[S];
  if (g.stage_inputs) g.smem_inputs = t[N] * t[C] * g.tile_input[0] * g.tile_input[1];

  const Level& regs = a.levels[kRegs];
  const int64_t reg_cap = std::min<int64_t>(255, regs.entries);
  SYLVA_CHECK(g.accumulators <= reg_cap, "[cosa] gpu kernel for '", p.name, "': level Registers, tensor Outputs: ",
              "a thread's register tile (", extents_text(g.reg), ") holds ", g.accumulators,
              " accumulators, above the ", reg_cap, " registers a thread has; move output factors from Registers up");
  const Level& smem = a.levels[kSmem];
  SYLVA_CHECK(smem.entries <= 0 || g.smem_weights + g.smem_inputs <= smem.entries, "[cosa] gpu kernel for '", p.name,
              "': level SharedMemory, tensors Weights (", g.smem_weights, " words) + Inputs (", g.smem_inputs,
              " words): the staged tile exceeds the level's ", smem.entries, " words");
  SYLVA_CHECK(g.threads_per_block <= 1024, "[cosa] gpu kernel for '", p.name, "': level SharedMemory's spatial loops (",
              loops_text(g.threads), ") make ", g.threads_per_block, " threads per block, above CUDA's 1024");
  const auto [wi, hi] = input_extents(p);
  const int64_t biggest = std::max({weight_size(p), input_size(p), output_size(p), wi * hi, g.blocks});
  SYLVA_CHECK(biggest <= std::numeric_limits<int>::max() / 2, "[cosa] gpu kernel for '", p.name, "': ", biggest,
              " elements in one tensor: past the kernel's 32-bit index arithmetic");
  for (const auto* loops : {&g.outer, &g.grid, &g.threads, &g.out_steps, &g.red_steps})
    SYLVA_ASSERT(loops->size() <= sylva_cosa::kMaxLoops, "gpu kernel: ", loops->size(), " loops at one place");
  return g;
}

std::string describe(const GpuConvPlan& g) {
  std::ostringstream os;
  os << "gpu conv '" << g.problem.name << "': " << g.blocks << " blocks x " << g.threads_per_block << " threads, "
     << product(g.outer) << " steps per block" << (g.atomic ? ", outputs added atomically" : "") << "\n"
     << "  outer (DRAM, L2 temporal): " << loops_text(g.outer) << "\n"
     << "  blocks (L2 spatial):       " << loops_text(g.grid) << "\n"
     << "  threads (SMEM spatial):    " << loops_text(g.threads) << "\n"
     << "  SMEM temporal: outputs " << loops_text(g.out_steps) << ", reduction " << loops_text(g.red_steps) << "\n"
     << "  staged tile " << extents_text(g.tile) << ": weights " << (g.stage_weights ? std::to_string(g.smem_weights) : "not staged")
     << ", inputs " << (g.stage_inputs ? std::to_string(g.smem_inputs) : "not staged") << " elements\n"
     << "  register tile " << extents_text(g.reg) << ": " << g.accumulators << " accumulators per thread\n";
  return os.str();
}

namespace {

// The template's ConvPlan initialiser: every value the kernel is generated from.
std::string plan_init(const GpuConvPlan& plan) {
  const sylva_cosa::ConvPlan c = device_plan(plan);
  std::ostringstream os;
  os << "{" << ints(c.bounds, 7) << ", " << c.w_stride << ", " << c.h_stride << ", " << c.w_dilation << ", "
     << c.h_dilation << ", " << c.wi << ", " << c.hi << ",\n    " << loops_init(c.outer) << ",\n    "
     << loops_init(c.grid) << ",\n    " << loops_init(c.threads) << ",\n    " << loops_init(c.out_steps)
     << ",\n    " << loops_init(c.red_steps) << ",\n    " << ints(c.tile, 7) << ", " << ints(c.reg, 7) << ", "
     << c.stage_w << ", " << c.stage_in << ", " << c.atomic << ", " << c.tile_wi << ", " << c.tile_hi << ", "
     << c.smem_w << ", " << c.smem_in << "}";
  return os.str();
}

}  // namespace

std::string gpu_conv_kernel_name(const GpuConvPlan& plan, GpuReal real) {
  return std::string("sylva_cosa_conv_") + (real == GpuReal::f32 ? "f32_" : "f64_") + hex64(fnv1a(plan_init(plan)));
}

std::string gpu_conv_source(const GpuConvPlan& plan, GpuReal real) {
  const char* t = real == GpuReal::f32 ? "float" : "double";
  std::ostringstream os;
  os << "// Generated by sylva::cosa::gpu_conv_source.\n" << "/*\n" << describe(plan) << "*/\n"
     << "#define SYLVA_COSA_HD __device__ __forceinline__\n"
     << kCosaConvTemplate << "\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << plan.threads_per_block << ") "
     << gpu_conv_kernel_name(plan, real) << "(const " << t << "* __restrict__ w, const " << t
     << "* __restrict__ in, " << t << "* __restrict__ out) {\n"
     << "  constexpr sylva_cosa::ConvPlan kPlan = " << plan_init(plan) << ";\n"
     << "  extern __shared__ double sylva_smem_words[];\n"
     << "  " << t << "* smem = reinterpret_cast<" << t << "*>(sylva_smem_words);\n"
     << "  const bool staged = kPlan.stage_w || kPlan.stage_in;\n"
     << "  const int steps = sylva_cosa::loop_count(kPlan.outer);\n"
     << "  for (int step = 0; step < steps; ++step) {\n"
     << "    int origin[sylva_cosa::kDims];\n"
     << "    sylva_cosa::step_origin(kPlan, blockIdx.x, step, origin);\n"
     << "    if (staged) {\n"
     << "      sylva_cosa::stage<" << t << ">(kPlan, threadIdx.x, blockDim.x, w, in, smem, origin);\n"
     << "      __syncthreads();\n"
     << "    }\n"
     << "    sylva_cosa::compute<" << t << ", " << plan.accumulators << ">(kPlan, sylva_cosa::FixedTile<"
     << plan.reg[N] << ", " << plan.reg[K] << ", " << plan.reg[P] << ", " << plan.reg[Q] << ", " << plan.reg[C] << ", "
     << plan.reg[R] << ", " << plan.reg[S] << ">(), threadIdx.x, w, in, smem, origin, out);\n"
     << "    if (staged) __syncthreads();\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

template <class T>
void emulate_gpu_conv(const GpuConvPlan& plan, const T* weights, const T* inputs, T* outputs) {
  const sylva_cosa::ConvPlan c = device_plan(plan);
  std::vector<T> smem(static_cast<size_t>(std::max<int64_t>(1, plan.smem_weights + plan.smem_inputs)));
  const int threads = static_cast<int>(plan.threads_per_block), steps = sylva_cosa::loop_count(c.outer);
  const sylva_cosa::PlanTile tile{c.reg[N], c.reg[K], c.reg[P], c.reg[Q], c.reg[C], c.reg[R], c.reg[S]};
  for (int b = 0; b < plan.blocks; ++b)
    for (int step = 0; step < steps; ++step) {
      int origin[sylva_cosa::kDims];
      sylva_cosa::step_origin(c, b, step, origin);
      for (int t = 0; t < threads; ++t) sylva_cosa::stage<T>(c, t, threads, weights, inputs, smem.data(), origin);
      for (int t = 0; t < threads; ++t)  // 255: the most accumulators gpu_conv_plan allows
        sylva_cosa::compute<T, 255>(c, tile, t, weights, inputs, smem.data(), origin, outputs);
    }
}

template void emulate_gpu_conv<float>(const GpuConvPlan&, const float*, const float*, float*);
template void emulate_gpu_conv<double>(const GpuConvPlan&, const double*, const double*, double*);

}  // namespace sylva::cosa
