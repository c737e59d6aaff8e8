// CNN kernels with CoSA-scheduled convolutions (sylva/graph/cnn_cosa.h).
#include "sylva/graph/cnn_cosa.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "sylva/core/device.h"
#include "sylva/core/error.h"
#include "sylva/core/file.h"
#include "sylva/core/hash.h"
#include "sylva/core/log.h"
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"

namespace sylva::cnn {

std::string ConvDecision::line() const {
  char buf[160];
  if (cosa_ms > 0 && onednn_ms > 0)
    std::snprintf(buf, sizeof buf, " (%.3f ms vs %s %.3f ms)", cosa ? cosa_ms : onednn_ms, cosa ? "onednn" : "cosa",
                  cosa ? onednn_ms : cosa_ms);
  else
    buf[0] = '\0';
  std::string s = "conv " + key + ": " + (cosa ? "cosa" : "onednn") + buf;
  return reason.empty() ? s : s + ", " + reason;
}

cosa::Problem conv_problem(const ConvSpec& c, Nchw in) {
  SYLVA_CHECK(c.groups == 1, "[cnn cosa] conv '", c.key, "': groups = ", c.groups,
              ", but the CoSA kernel generator realises groups = 1 only");
  cosa::Problem p;
  p.name = c.key;
  p.bounds[cosa::R] = c.kernel[0];
  p.bounds[cosa::S] = c.kernel[1];
  p.bounds[cosa::P] = c.out_h;
  p.bounds[cosa::Q] = c.out_w;
  p.bounds[cosa::C] = in.c;
  p.bounds[cosa::K] = c.out_channels;
  p.bounds[cosa::N] = in.n;
  p.w_stride = c.stride[0];
  p.h_stride = c.stride[1];
  return p;
}

namespace {

// One convolution layer: its problem and mapping, and whether its input
// needs a zero-bordered copy (padding, or rows the strides never reach).
struct Layer {
  ConvDecision decision;
  Nchw in;
  cosa::Problem problem;
  cosa::Mapping mapping;
  bool copy_input = false;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A convolution's shape as the cache keys it: input, output channels, kernel, strides, padding, groups.
std::string shape_of(const ConvSpec& c, Nchw in) {
  return detail::concat(in.n, "x", in.c, "x", in.h, "x", in.w, ">", c.out_channels, ",k", c.kernel[0], "x",
                        c.kernel[1], ",s", c.stride[0], "x", c.stride[1], ",p", c.padding[0], "x", c.padding[1],
                        ",g", c.groups);
}

// The machine a measurement holds for: the architecture (caches, cores,
// SIMD registers) and the threads the kernels run on.
std::string machine_of(const cosa::Arch& a, int threads) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(cosa::arch_yaml(a))));
  return detail::concat(a.name, "-", hex, "-t", threads);
}

// One measured choice of the pick cache.
struct Cached {
  bool cosa = false;
  double cosa_ms = 0, onednn_ms = 0;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  for (size_t at = 0;;) {
    const size_t end = line.find('\t', at);
    f.push_back(line.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return f;
    at = end + 1;
  }
}

double parse_ms(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  SYLVA_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(v) && v >= 0, where,
              ": a time in ms is a finite number >= 0, got '", text, "'");
  return v;
}

}  // namespace

struct CosaCnnKernels::State {
  Mode mode;
  cosa::Arch arch;
  cosa::Mapspace mapspace;
  std::unique_ptr<CnnKernels> onednn = make_cpu_cnn_kernels(false);
  mutable std::mutex mu;
  std::map<std::string, std::unique_ptr<Layer>> layers;
  std::vector<const Layer*> order;
  int threads = usable_cpu_cores();  // the CoSA kernels' (oneDNN runs on its OpenMP threads)
  // The pick cache: every entry of the file by its first three fields
  // (machine, layer key, shape), this machine's among them.
  std::string cache_path, machine;
  std::map<std::string, Cached> cache;

  void load_cache() {
    if (cache_path.empty() || !std::filesystem::exists(cache_path)) return;
    const std::string text = read_file(cache_path);
    int line_no = 0;
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      ++line_no;
      if (line.empty() || line[0] == '#') continue;
      const std::string where = detail::concat("[cnn cosa] pick cache ", cache_path, " line ", line_no);
      const std::vector<std::string> f = split_tabs(line);
      SYLVA_CHECK(f.size() == 6, where, ": ", f.size(),
                  " tab-separated fields, wanted 6 (machine, layer, shape, cosa|onednn, cosa_ms, onednn_ms)");
      SYLVA_CHECK(f[3] == "cosa" || f[3] == "onednn", where, ": the choice is cosa or onednn, got '", f[3], "'");
      cache[f[0] + '\t' + f[1] + '\t' + f[2]] = {f[3] == "cosa", parse_ms(f[4], where), parse_ms(f[5], where)};
    }
  }

  // This machine's measured choice for the layer, if the cache has one.
  bool cached(Layer& l, const std::string& shape) {
    const auto it = cache.find(machine + '\t' + l.decision.key + '\t' + shape);
    if (it == cache.end()) return false;
    l.decision.cosa = it->second.cosa;
    l.decision.cosa_ms = it->second.cosa_ms;
    l.decision.onednn_ms = it->second.onednn_ms;
    l.decision.reason = "cached";
    return true;
  }

  void remember(const Layer& l, const std::string& shape) {
    const std::string& key = l.decision.key;
    if (cache_path.empty() || key.find_first_of("\t\n") != std::string::npos) return;
    cache[machine + '\t' + key + '\t' + shape] = {l.decision.cosa, l.decision.cosa_ms, l.decision.onednn_ms};
    std::string text = "# sylva CoSA pick cache: machine, layer key, shape, choice, cosa_ms, onednn_ms (tab-separated)\n";
    for (const auto& [k, e] : cache)
      text += detail::concat(k, '\t', e.cosa ? "cosa" : "onednn", '\t', e.cosa_ms, '\t', e.onednn_ms, '\n');
    write_file_atomically(cache_path, text);
  }

  // Schedules the layer; sets decision.reason and returns false where the
  // CoSA kernel cannot run it.
  bool plan(Layer& l, const ConvSpec& c) {
    try {
      l.problem = conv_problem(c, l.in);
      const cosa::Result r = cosa::schedule(l.problem, arch, mapspace, cosa::cpu_objective(), cosa::cpu_limits());
      l.mapping = r.mapping;
      l.decision.solve_seconds = r.solve_seconds;
    } catch (const Error& e) {
      if (mode == Mode::cosa) throw;
      l.decision.reason = std::string("fell back: ") + e.what();
      return false;
    }
    const auto e = cosa::input_extents(l.problem);
    l.copy_input = c.padding[0] != 0 || c.padding[1] != 0 || e[0] != l.in.h || e[1] != l.in.w;
    return true;
  }

  // The zero-bordered input copy (a buffer per thread, kept across calls)
  // and the bias, both over the planes on the kernel's threads.
  void run_cosa(const Layer& l, const ConvSpec& c, const float* x, const float* w, const float* b, float* y) {
    if (l.copy_input) {
      thread_local std::vector<float> padded;
      const auto e = cosa::input_extents(l.problem);
      padded.resize(static_cast<size_t>(cosa::input_size(l.problem)));
      const int64_t rows = std::min(e[0], l.in.h + c.padding[0]) - c.padding[0];
      const int64_t cols = std::min(e[1], l.in.w + c.padding[1]) - c.padding[1];
      const int64_t planes = l.in.n * l.in.c, plane = e[0] * e[1];
      float* dst = padded.data();
#pragma omp parallel for num_threads(threads) if (threads > 1 && planes * plane > 32768)
      for (int64_t i = 0; i < planes; ++i) {
        float* to = dst + i * plane;
        std::fill(to, to + plane, 0.0f);
        for (int64_t h = 0; h < rows; ++h)
          std::copy_n(x + (i * l.in.h + h) * l.in.w, cols, to + (h + c.padding[0]) * e[1] + c.padding[1]);
      }
      x = dst;
    }
    cosa::run_conv(l.problem, l.mapping, arch, w, x, y, threads);
    const int64_t hw = c.out_h * c.out_w, rows = l.in.n * c.out_channels;
    if (b) {
#pragma omp parallel for num_threads(threads) if (threads > 1 && rows * hw > 32768)
      for (int64_t r = 0; r < rows; ++r) {
        const float bias = b[r % c.out_channels];
        for (float* v = y + r * hw; v != y + (r + 1) * hw; ++v) *v += bias;
      }
    }
    if (c.act != Act::identity) onednn->activate(y, rows * hw, c.act);
  }

  // Best of three runs of each kernel on the call's data; keeps the faster.
  void pick(Layer& l, const ConvSpec& c, const float* x, const float* w, const float* b, float* y) {
    double t_cosa = 1e300, t_onednn = 1e300;
    for (int i = 0; i < 3; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      onednn->conv(c, x, l.in, w, b, y);
      t_onednn = std::min(t_onednn, ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      run_cosa(l, c, x, w, b, y);
      t_cosa = std::min(t_cosa, ms_since(t0));
    }
    l.decision.cosa_ms = t_cosa;
    l.decision.onednn_ms = t_onednn;
    l.decision.cosa = t_cosa < t_onednn;
    l.decision.reason = "measured";
    if (!l.decision.cosa) onednn->conv(c, x, l.in, w, b, y);
  }
};

namespace {
std::string cache_from_env() {
  const char* v = std::getenv("SYLVA_COSA_CACHE");
  return v ? v : "";
}
}  // namespace

CosaCnnKernels::CosaCnnKernels(Mode mode) : CosaCnnKernels(mode, cosa::this_cpu_arch(), cache_from_env()) {}

CosaCnnKernels::CosaCnnKernels(Mode mode, const cosa::Arch& arch, const std::string& cache)
    : s_(std::make_unique<State>()) {
  s_->mode = mode;
  s_->arch = arch;
  s_->mapspace = cosa::cpu_mapspace(arch);
  if (mode == Mode::pick) {
    s_->cache_path = cache;
    s_->machine = machine_of(arch, s_->threads);
    s_->load_cache();
  }
}

CosaCnnKernels::~CosaCnnKernels() = default;

Backend& CosaCnnKernels::backend() { return s_->onednn->backend(); }

void CosaCnnKernels::move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels,
                                   int64_t y_c0, int64_t channels, int64_t n, int64_t hw, bool add) {
  s_->onednn->move_channels(x, x_channels, x_c0, y, y_channels, y_c0, channels, n, hw, add);
}
void CosaCnnKernels::activate(float* y, int64_t count, Act act) { s_->onednn->activate(y, count, act); }
void CosaCnnKernels::element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) {
  s_->onednn->element(x, y, n, terms, each, mul);
}
void CosaCnnKernels::pool(const PoolSpec& p, const float* x, Nchw in, float* y) { s_->onednn->pool(p, x, in, y); }

void CosaCnnKernels::conv(const ConvSpec& c, const float* x, Nchw in, const float* w, const float* b, float* y) {
  State& s = *s_;
  Layer* l = nullptr;
  {
    // The first call of a layer plans (and in `pick` mode measures) under
    // the lock: concurrent first calls do not disturb each other's timing.
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.layers.find(c.key);
    if (it != s.layers.end()) {
      l = it->second.get();
    } else {
      auto fresh = std::make_unique<Layer>();
      fresh->decision.key = c.key;
      fresh->in = in;
      const std::string shape = shape_of(c, in);
      // A cached oneDNN choice needs no schedule; a cached CoSA one does (a few ms of MIP).
      const bool from_cache = s.mode == Mode::pick && s.cached(*fresh, shape);
      const bool runnable = from_cache && !fresh->decision.cosa ? false : s.plan(*fresh, c);  // throws in `cosa` mode
      l = fresh.get();
      s.order.push_back(l);
      s.layers.emplace(c.key, std::move(fresh));
      if (from_cache) {
        if (l->decision.cosa && !runnable) {  // plan() said why in the reason
          l->decision.cosa = false;
          l->decision.reason = "cached cosa, but " + l->decision.reason;
        }
        log(LogLevel::info, "[cnn cosa] " + l->decision.line());
      } else if (!runnable) {
        log(LogLevel::info, "[cnn cosa] " + l->decision.line());
        s.onednn->conv(c, x, in, w, b, y);
        return;
      } else if (s.mode == Mode::pick) {  // y is written by the kernel picked
        s.pick(*l, c, x, w, b, y);
        s.remember(*l, shape);
        log(LogLevel::info, "[cnn cosa] " + l->decision.line());
        return;
      } else {
        l->decision.cosa = true;
        l->decision.reason = "scheduled";
      }
    }
  }
  SYLVA_CHECK(in.n == l->in.n && in.c == l->in.c && in.h == l->in.h && in.w == l->in.w, "[cnn cosa] conv '", c.key,
              "' was planned for input [", l->in.n, ", ", l->in.c, ", ", l->in.h, ", ", l->in.w, "], called with [",
              in.n, ", ", in.c, ", ", in.h, ", ", in.w, "]");
  if (l->decision.cosa)
    s.run_cosa(*l, c, x, w, b, y);
  else
    s.onednn->conv(c, x, in, w, b, y);
}

std::vector<ConvDecision> CosaCnnKernels::decisions() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  std::vector<ConvDecision> out;
  for (const Layer* l : s_->order) out.push_back(l->decision);
  return out;
}

}  // namespace sylva::cnn
