#include "sylva/sched/cosa_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include <unistd.h>

#include "sylva/core/device.h"
#include "sylva/core/error.h"
#include "sylva/core/log.h"
#include "sylva/sched/cpu_fallback_arch.h"

namespace sylva::cosa {
namespace fs = std::filesystem;

namespace {

std::string read_line(const fs::path& file) {
  std::ifstream in(file);
  SYLVA_CHECK(in, "[cosa] cannot read ", file.string());
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

int64_t parse_int(const std::string& text, const fs::path& file) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  SYLVA_CHECK(end != text.c_str() && v >= 0, "[cosa] ", file.string(), ": expected a number, got '", text, "'");
  return v;
}

// "32K", "1024K", "32M", "512" (bytes).
int64_t parse_size(const std::string& text, const fs::path& file) {
  int64_t v = parse_int(text, file);
  const char unit = text.empty() ? '\0' : text.back();
  if (unit == 'K') v <<= 10;
  else if (unit == 'M') v <<= 20;
  else if (unit == 'G') v <<= 30;
  else SYLVA_CHECK(unit >= '0' && unit <= '9', "[cosa] ", file.string(), ": unknown size unit in '", text, "'");
  SYLVA_CHECK(v > 0, "[cosa] ", file.string(), ": a cache of size 0");
  return v;
}

// "0-1", "0,2-3", "5": how many CPUs the list names.
int count_cpus(const std::string& list, const fs::path& file) {
  int n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const size_t dash = part.find('-');
    const int64_t lo = parse_int(part.substr(0, dash), file);
    const int64_t hi = dash == std::string::npos ? lo : parse_int(part.substr(dash + 1), file);
    SYLVA_CHECK(hi >= lo, "[cosa] ", file.string(), ": bad CPU range '", part, "'");
    n += static_cast<int>(hi - lo + 1);
  }
  SYLVA_CHECK(n > 0, "[cosa] ", file.string(), ": no CPUs in '", list, "'");
  return n;
}

// This build's vector unit for float32: lanes and architectural registers.
std::pair<int, int> simd_of_this_build() {
#if defined(__AVX512F__)
  return {16, 32};
#elif defined(__AVX2__) || defined(__AVX__)
  return {8, 16};
#else
  return {4, 16};
#endif
}

// Words per cycle a cache level delivers to one core (assumed; see CpuFacts).
double cache_words_per_cycle(int level, int64_t line_bytes) {
  const double line_words = static_cast<double>(line_bytes) / 4.0;
  return level == 1 ? 2 * line_words : level == 2 ? line_words : line_words / 2;
}

}  // namespace

CpuFacts read_cpu_facts(const std::string& sysfs_cpu, int cores) {
  CpuFacts f;
  f.cores = cores > 0 ? cores : usable_cpu_cores();
  std::tie(f.simd_lanes, f.vector_registers) = simd_of_this_build();
  const fs::path dir = fs::path(sysfs_cpu) / "cpu0" / "cache";
  SYLVA_CHECK(fs::is_directory(dir), "[cosa] no cache description at ", dir.string(),
              " (not Linux, or sysfs not mounted): write the architecture by hand (sylva-cosa arch shows the "
              "format) and pass it with --arch FILE");
  for (int i = 0;; ++i) {
    const fs::path index = dir / ("index" + std::to_string(i));
    if (!fs::is_directory(index)) break;
    if (read_line(index / "type") == "Instruction") continue;
    CpuFacts::Cache c;
    c.level = static_cast<int>(parse_int(read_line(index / "level"), index / "level"));
    c.bytes = parse_size(read_line(index / "size"), index / "size");
    c.shared_by = count_cpus(read_line(index / "shared_cpu_list"), index / "shared_cpu_list");
    if (fs::exists(index / "coherency_line_size"))
      c.line_bytes = parse_int(read_line(index / "coherency_line_size"), index / "coherency_line_size");
    f.caches.push_back(c);
  }
  SYLVA_CHECK(!f.caches.empty(), "[cosa] ", dir.string(), " lists no data caches");
  std::sort(f.caches.begin(), f.caches.end(), [](const auto& a, const auto& b) { return a.level < b.level; });
  return f;
}

Arch cpu_arch(const CpuFacts& f, const std::string& name) {
  SYLVA_CHECK(f.cores >= 1 && f.simd_lanes >= 1 && f.vector_registers >= 1 && !f.caches.empty(),
              "[cosa] cpu_arch: needs cores, lanes, registers and at least one cache");
  Arch a;
  a.name = name;
  a.mac_word_bits = 32;
  a.mac_instances = int64_t{f.cores} * f.simd_lanes;
  a.mac_energy = std::nan("");
  // Four registers stay free for the operands a micro-kernel loads.
  const int64_t entries = std::max(1, f.vector_registers - 4);
  Level regs{.name = "Registers", .entries = entries, .instances = a.mac_instances, .word_bits = 32};
  regs.vector_access_energy = std::nan("");
  a.levels.push_back(regs);
  int64_t below = f.cores;  // the first cache is at most per core
  for (size_t i = 0; i < f.caches.size(); ++i) {
    const CpuFacts::Cache& c = f.caches[i];
    SYLVA_CHECK(i == 0 || c.bytes > f.caches[i - 1].bytes, "[cosa] cpu_arch: L", c.level, " (", c.bytes,
                " bytes) is not larger than the cache below it (", f.caches[i - 1].bytes, " bytes)");
    int64_t instances = std::max<int64_t>(1, f.cores / std::max(1, c.shared_by));
    while (below % instances != 0) --instances;  // each instance serves whole instances below it
    below = instances;
    Level l{.name = "L" + std::to_string(c.level), .entries = c.bytes / 4, .instances = instances, .word_bits = 32,
            .block_size = std::max<int64_t>(1, c.line_bytes / 4)};
    l.read_bandwidth = l.write_bandwidth =
        cache_words_per_cycle(c.level, c.line_bytes) * static_cast<double>(f.cores / instances);
    l.vector_access_energy = std::nan("");
    a.levels.push_back(l);
  }
  Level dram{.name = "DRAM", .instances = 1, .word_bits = 32, .block_size = 16, .dram = true};
  dram.read_bandwidth = dram.write_bandwidth = f.dram_words_per_cycle;
  dram.vector_access_energy = pat_access_energy(dram);
  a.levels.push_back(dram);
  return a;
}

CpuFacts sysconf_cpu_facts(int cores) {
  CpuFacts f;
  f.cores = cores > 0 ? cores : usable_cpu_cores();
  std::tie(f.simd_lanes, f.vector_registers) = simd_of_this_build();
  const struct {
    int level, size, line;
  } names[] = {{1, _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL1_DCACHE_LINESIZE},
               {2, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL2_CACHE_LINESIZE},
               {3, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL3_CACHE_LINESIZE}};
  for (const auto& n : names) {
    const long bytes = sysconf(n.size), line = sysconf(n.line);
    if (bytes <= 0) break;  // a level it does not know ends the hierarchy
    f.caches.push_back({n.level, bytes, n.level == 3 ? f.cores : 1, line > 0 ? line : 64});
  }
  SYLVA_CHECK(!f.caches.empty(), "[cosa] sysconf reports no L1 data cache size");
  return f;
}

Arch find_cpu_arch(const CpuArchSources& sources, std::string* source) {
  std::string why;
  try {
    Arch a = cpu_arch(read_cpu_facts(sources.sysfs_cpu));
    if (source) *source = "sysfs (" + sources.sysfs_cpu + ")";
    return a;
  } catch (const Error& e) {
    why = std::string("sysfs: ") + e.what();
  }
  if (sources.sysconf) {
    try {
      Arch a = cpu_arch(sysconf_cpu_facts());
      if (source) *source = "sysconf; " + why;
      return a;
    } catch (const Error& e) {
      why += std::string("; sysconf: ") + e.what();
    }
  }
  if (!sources.fallback_file.empty()) {
    Arch a = read_arch(sources.fallback_file);
    if (source) *source = "the fallback file " + sources.fallback_file + "; " + why;
    return a;
  }
  if (source) *source = "the shipped fallback (src/sched/arch/cpu_fallback.yaml); " + why;
  return parse_arch(kCpuFallbackArch, "cpu_fallback");
}

Arch this_cpu_arch(std::string* source) {
  CpuArchSources s;
  if (const char* f = std::getenv("SYLVA_CPU_ARCH")) s.fallback_file = f;
  std::string from;
  Arch a = find_cpu_arch(s, &from);
  if (from.rfind("sysfs", 0) != 0) log(LogLevel::warning, "[cosa] this CPU's architecture from " + from);
  if (source) *source = from;
  return a;
}

std::string arch_yaml(const Arch& a) {
  std::ostringstream os;
  os.precision(17);
  os << "arch:\n  arithmetic:\n    instances: " << a.mac_instances << "\n    word-bits: " << a.mac_word_bits << "\n";
  if (std::isfinite(a.mac_energy)) os << "    energy: " << a.mac_energy << "\n";
  os << "  storage:\n";
  for (const Level& l : a.levels) {
    os << "  - name: " << l.name << "\n";
    if (l.dram) os << "    technology: \"DRAM\"\n";
    else os << "    entries: " << l.entries << "\n";
    os << "    instances: " << l.instances << "\n    word-bits: " << l.word_bits << "\n    block-size: " << l.block_size
       << "\n    cluster-size: " << l.cluster_size << "\n";
    if (l.read_bandwidth > 0) os << "    read_bandwidth: " << l.read_bandwidth << "\n";
    if (l.write_bandwidth > 0) os << "    write_bandwidth: " << l.write_bandwidth << "\n";
    if (l.multiple_buffering != 1) os << "    multiple-buffering: " << l.multiple_buffering << "\n";
    if (std::isfinite(l.vector_access_energy)) os << "    vector-access-energy: " << l.vector_access_energy << "\n";
  }
  return os.str();
}

double nominal_ghz() {
  if (std::ifstream f("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); f) {
    double khz = 0;
    if (f >> khz && khz > 0) return khz * 1e-6;
  }
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos)
      return std::stod(line.substr(line.find(':') + 1)) * 1e-3;
  return std::nan("");
}

Mapspace keep_everything(const Arch& a) {
  Mapspace ms;
  ms.keep.assign(a.levels.size(), {true, true, true});
  return ms;
}

Mapspace cpu_mapspace(const Arch& a) {
  Mapspace ms = keep_everything(a);
  const int regs = a.level("Registers");
  ms.keep[static_cast<size_t>(regs)] = {false, false, true};
  ms.spatial_dims.assign(a.levels.size(), {false, false, true, true, false, true, true});  // P Q K N
  if (regs + 1 < static_cast<int>(a.levels.size()))
    ms.spatial_dims[static_cast<size_t>(regs + 1)] = {false, false, false, false, false, true, false};  // K
  // Outputs stationary at the level above L1: its reduction loops run
  // innermost there, so run_conv folds them into the block and the
  // accumulators stay in registers over them (on ResNet-50's 1x1 stride-2
  // layer _outputs_input.40, CoSA's own mapping with only that level's
  // order changed ran about 2x faster on channels-last data: 84 -> 163-169
  // GFLOP/s).
  if (regs + 2 < static_cast<int>(a.levels.size())) {
    ms.stationary.assign(a.levels.size(), -1);
    ms.stationary[static_cast<size_t>(regs + 2)] = Outputs;
  }
  return ms;
}

}  // namespace sylva::cosa
