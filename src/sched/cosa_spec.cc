// Timeloop v1 YAML for CoSA: reading problems, architectures, mapspaces and
// mappings (yaml-cpp), writing mappings, checking a mapping's factors.
#include "sylva/sched/cosa_spec.h"

#include <yaml-cpp/depthguard.h>  // YAML::DeepRecursion
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>
#include <sstream>

#include "sylva/core/error.h"
#include "sylva/core/file.h"

namespace sylva::cosa {

namespace {

// Parses YAML text; sylva::Error naming `what` when it is malformed or
// nests too deep: bracket nesting is refused before parsing (check_nesting),
// block nesting ("- - - x", "? ? x") by yaml-cpp's own guard (DepthGuard: 500 levels in 0.7.0).
YAML::Node parse_yaml(const std::string& text, const std::string& what) {
  check_nesting(text, what);
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    SYLVA_THROW("[cosa] ", what, ": line ", e.mark.line + 1, ": YAML nests deeper than ", e.depth(),
                " levels (a corrupt or hostile file; no real one nests that deep)");
  } catch (const YAML::Exception& e) {
    SYLVA_THROW("[cosa] ", what, ": malformed YAML at line ", e.mark.line + 1, ": ", e.msg);
  }
}

// Loads a YAML file; sylva::Error naming it when it is missing or malformed.
YAML::Node load(const std::string& path) {
  SYLVA_CHECK(std::filesystem::exists(path), "[cosa] no such file: ", path);
  return parse_yaml(read_file(path), path);
}

YAML::Node section(const YAML::Node& root, const char* key, const std::string& what, bool list = false) {
  SYLVA_CHECK(root.IsMap(), "[cosa] ", what, ": expected a map holding '", key, "'");
  const YAML::Node n = root[key];
  SYLVA_CHECK(n, "[cosa] ", what, ": no '", key, "' ", list ? "list" : "section");
  SYLVA_CHECK(list ? n.IsSequence() : n.IsMap(), "[cosa] ", what, ": '", key, "' (line ", n.Mark().line + 1,
              ") is not a ", list ? "list" : "map");
  return n;
}

template <class T>
T get(const YAML::Node& n, const char* key, const std::string& what, T fallback, bool required) {
  const YAML::Node v = n[key];
  if (!v) {
    SYLVA_CHECK(!required, "[cosa] ", what, ": missing '", key, "'");
    return fallback;
  }
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    SYLVA_THROW("[cosa] ", what, ": '", key, "' is not ", std::is_floating_point_v<T> ? "a number" : "an integer",
                " (line ", v.Mark().line + 1, ")");
  }
}

int dim_index(char c, const std::string& what) {
  const auto it = std::find(kDimNames.begin(), kDimNames.end(), c);
  SYLVA_CHECK(it != kDimNames.end(), "[cosa] ", what, ": unknown dimension '", c, "' (R S P Q C K N)");
  return static_cast<int>(it - kDimNames.begin());
}

int tensor_index(const std::string& name, const std::string& what) {
  for (int t = 0; t < kTensors; ++t)
    if (name == tensor_name(t)) return t;
  SYLVA_THROW("[cosa] ", what, ": unknown tensor '", name, "' (Weights, Inputs, Outputs)");
}

// "R=1 S=1 P=7 ..." -> factors (every dimension must appear once).
std::array<int64_t, kDims> parse_factors(const std::string& text, const std::string& what) {
  std::array<int64_t, kDims> f{};
  std::array<bool, kDims> seen{};
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    SYLVA_CHECK(item.size() >= 3 && item[1] == '=', "[cosa] ", what, ": factor '", item, "' is not D=n");
    const int d = dim_index(item[0], what);
    SYLVA_CHECK(!seen[static_cast<size_t>(d)], "[cosa] ", what, ": dimension ", item[0], " twice");
    try {
      size_t used = 0;
      f[static_cast<size_t>(d)] = std::stoll(item.substr(2), &used);
      SYLVA_CHECK(used == item.size() - 2 && f[static_cast<size_t>(d)] >= 1, "");
    } catch (const std::exception&) {
      SYLVA_THROW("[cosa] ", what, ": factor '", item, "' is not a positive integer");
    }
    seen[static_cast<size_t>(d)] = true;
  }
  for (int d = 0; d < kDims; ++d)
    SYLVA_CHECK(seen[static_cast<size_t>(d)], "[cosa] ", what, ": no factor for ", kDimNames[static_cast<size_t>(d)]);
  return f;
}

std::string check_permutation(const std::string& p, const std::string& what) {
  std::string sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::string all(kDimNames.begin(), kDimNames.end());
  std::sort(all.begin(), all.end());
  SYLVA_CHECK(sorted == all, "[cosa] ", what, ": permutation '", p, "' is not an ordering of RSPQCKN");
  return p;
}

std::array<bool, kTensors> keep_of(const YAML::Node& entry, const std::string& what) {
  std::array<bool, kTensors> keep{true, true, true};
  for (const char* key : {"keep", "bypass"}) {
    const YAML::Node list = entry[key];
    if (!list) continue;
    SYLVA_CHECK(list.IsSequence(), "[cosa] ", what, ": '", key, "' is not a list");
    for (const YAML::Node& t : list) {
      SYLVA_CHECK(t.IsScalar(), "[cosa] ", what, ": '", key, "' holds a non-name at line ", t.Mark().line + 1);
      keep[static_cast<size_t>(tensor_index(t.Scalar(), what))] = *key == 'k';
    }
  }
  return keep;
}

}  // namespace

const char* tensor_name(int t) {
  static const char* names[] = {"Weights", "Inputs", "Outputs"};
  SYLVA_CHECK(t >= 0 && t < kTensors, "[cosa] tensor index ", t, " out of range");
  return names[t];
}

int64_t Problem::macs() const {
  int64_t m = 1;
  for (int64_t b : bounds) m *= b;
  return m;
}

int Arch::level(const std::string& n) const {
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i].name == n) return static_cast<int>(i);
  SYLVA_THROW("[cosa] architecture '", name, "' has no storage level '", n, "'");
}

int64_t Arch::fanout(int i) const {
  SYLVA_CHECK(i >= 0 && i < static_cast<int>(levels.size()), "[cosa] level ", i, " out of range");
  const int64_t below = i == 0 ? mac_instances : levels[static_cast<size_t>(i - 1)].instances;
  return below / levels[static_cast<size_t>(i)].instances;
}

std::vector<int> loops_outer_first(const std::string& innermost_first) {
  std::vector<int> order;
  for (int d = 0; d < kDims; ++d)
    if (innermost_first.find(kDimNames[static_cast<size_t>(d)]) == std::string::npos) order.push_back(d);
  for (auto it = innermost_first.rbegin(); it != innermost_first.rend(); ++it)
    order.push_back(dim_index(*it, "loop permutation '" + innermost_first + "'"));
  return order;
}

Mapping blank_mapping(const Arch& a, const Mapspace& ms) {
  SYLVA_CHECK(ms.keep.size() == a.levels.size(), "[cosa] the mapspace has ", ms.keep.size(), " levels, the arch ",
              a.levels.size());
  SYLVA_CHECK(ms.spatial_dims.empty() || ms.spatial_dims.size() == a.levels.size(), "[cosa] the mapspace restricts ",
              ms.spatial_dims.size(), " levels' spatial dimensions, the arch has ", a.levels.size(), " levels");
  Mapping m;
  for (const Level& l : a.levels) m.level_names.push_back(l.name);
  m.levels.assign(a.levels.size(), {});
  for (size_t i = 0; i < a.levels.size(); ++i) {
    m.levels[i].keep = ms.keep[i];
    m.levels[i].has_spatial = a.fanout(static_cast<int>(i)) > 1;
  }
  return m;
}

namespace {
Problem read_problem_unguarded(const std::string& path) {
  const YAML::Node root = load(path);
  const YAML::Node p = section(root, "problem", path);
  Problem out;
  out.name = std::filesystem::path(path).stem().string();
  for (int d = 0; d < kDims; ++d) {
    const char key[2] = {kDimNames[static_cast<size_t>(d)], '\0'};
    out.bounds[static_cast<size_t>(d)] = get<int64_t>(p, key, path, 1, true);
    SYLVA_CHECK(out.bounds[static_cast<size_t>(d)] >= 1, "[cosa] ", path, ": ", key, " must be >= 1");
  }
  out.w_stride = get<int64_t>(p, "Wstride", path, 1, false);
  out.h_stride = get<int64_t>(p, "Hstride", path, 1, false);
  out.w_dilation = get<int64_t>(p, "Wdilation", path, 1, false);
  out.h_dilation = get<int64_t>(p, "Hdilation", path, 1, false);
  for (int64_t v : {out.w_stride, out.h_stride, out.w_dilation, out.h_dilation})
    SYLVA_CHECK(v >= 1, "[cosa] ", path, ": strides and dilations must be >= 1");
  return out;
}
}  // namespace

double pat_access_energy(const Level& l) {
  if (l.dram) return 12.5 * static_cast<double>(l.word_bits * l.block_size);
  struct Known {
    int64_t entries, word_bits, block_size;
    double pj;
  };
  // Fitted from shared/data/cosa/timeloop_golden (energy / accesses x
  // clusters touched, per level): constant to 6 digits over 208 mappings.
  static constexpr Known kSram[] = {
      {1, 8, 1, 0.489008}, {64, 24, 1, 1.575377}, {16384, 8, 8, 7.115578}, {4096, 8, 8, 4.703518},
      {65536, 8, 8, 16.763819}};
  for (const Known& k : kSram)
    if (k.entries == l.entries && k.word_bits == l.word_bits && k.block_size == l.block_size) return k.pj;
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {
// `path`: where the text came from, for the messages.
Arch arch_of(const YAML::Node& root, const std::string& path, const std::string& name) {
  const YAML::Node a = section(root, "arch", path);
  Arch out;
  out.name = name;
  const YAML::Node arith = section(a, "arithmetic", path);
  out.mac_instances = get<int64_t>(arith, "instances", path + " arithmetic", 0, true);
  out.mac_word_bits = get<int64_t>(arith, "word-bits", path + " arithmetic", 8, false);
  out.mac_energy = get<double>(arith, "energy", path + " arithmetic",
                               out.mac_word_bits == 8 ? 0.25 : std::numeric_limits<double>::quiet_NaN(), false);
  const YAML::Node storage = section(a, "storage", path, true);
  for (const YAML::Node& s : storage) {
    Level l;
    l.name = get<std::string>(s, "name", path + " storage", "", true);
    const std::string what = path + " level " + l.name;
    l.dram = get<std::string>(s, "technology", what, "", false) == "DRAM";
    l.entries = get<int64_t>(s, "entries", what, 0, !l.dram);
    l.instances = get<int64_t>(s, "instances", what, 1, true);
    l.word_bits = get<int64_t>(s, "word-bits", what, 8, false);
    l.block_size = get<int64_t>(s, "block-size", what, 1, false);
    l.cluster_size = get<int64_t>(s, "cluster-size", what, 1, false);
    const double bw = get<double>(s, "bandwidth", what, 0.0, false);
    l.read_bandwidth = get<double>(s, "read_bandwidth", what, bw, false);
    l.write_bandwidth = get<double>(s, "write_bandwidth", what, bw, false);
    l.multiple_buffering = get<double>(s, "multiple-buffering", what, 1.0, false);
    l.vector_access_energy = get<double>(s, "vector-access-energy", what, pat_access_energy(l), false);
    SYLVA_CHECK(l.instances >= 1 && l.entries >= 0, "[cosa] ", what, ": instances must be >= 1, entries >= 0");
    SYLVA_CHECK(l.block_size >= 1 && l.cluster_size >= 1, "[cosa] ", what, ": block-size and cluster-size must be >= 1");
    out.levels.push_back(std::move(l));
  }
  SYLVA_CHECK(!out.levels.empty(), "[cosa] ", path, ": no storage levels");
  for (size_t i = 0; i < out.levels.size(); ++i) {
    const int64_t below = i == 0 ? out.mac_instances : out.levels[i - 1].instances;
    SYLVA_CHECK(below % out.levels[i].instances == 0, "[cosa] ", path, ": level ", out.levels[i].name, " has ",
                out.levels[i].instances, " instances, which do not divide the ", below, " below it");
  }
  return out;
}
}  // namespace

namespace {
Mapspace read_mapspace_unguarded(const std::string& path, const Arch& arch) {
  const YAML::Node root = load(path);
  const YAML::Node ms = section(root, "mapspace", path);
  const YAML::Node constraints = section(ms, "constraints", path, true);
  Mapspace out;
  out.keep.assign(arch.levels.size(), {true, true, true});
  for (const YAML::Node& c : constraints) {
    if (get<std::string>(c, "type", path, "", true) != "datatype") continue;
    const std::string target = get<std::string>(c, "target", path, "", true);
    out.keep[static_cast<size_t>(arch.level(target))] = keep_of(c, path + " target " + target);
  }
  return out;
}
}  // namespace

namespace {
std::vector<std::string> read_layer_list_unguarded(const std::string& path) {
  const YAML::Node root = load(path);
  SYLVA_CHECK(root.IsSequence(), "[cosa] ", path, ": expected a list of layer names");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<std::string> out;
  for (const YAML::Node& n : root) {
    SYLVA_CHECK(n.IsScalar(), "[cosa] ", path, ": entry at line ", n.Mark().line + 1, " is not a layer name");
    const std::string file = (dir / (n.Scalar() + ".yaml")).string();
    SYLVA_CHECK(std::filesystem::exists(file), "[cosa] ", path, " line ", n.Mark().line + 1, ": no layer file ", file);
    out.push_back(file);
  }
  SYLVA_CHECK(!out.empty(), "[cosa] ", path, ": no layers");
  return out;
}
}  // namespace

namespace {
Mapping parse_mapping_unguarded(const std::string& text, const Arch& arch, const std::string& what) {
  const YAML::Node root = parse_yaml(text, what);
  const YAML::Node entries = section(root, "mapping", what, true);
  Mapping m;
  for (const Level& l : arch.levels) m.level_names.push_back(l.name);
  m.levels.assign(arch.levels.size(), {});
  std::vector<std::array<bool, 3>> seen(arch.levels.size(), {false, false, false});  // temporal, spatial, bypass
  for (const YAML::Node& e : entries) {
    const std::string target = get<std::string>(e, "target", what, "", true);
    const std::string type = get<std::string>(e, "type", what, "", true);
    const std::string at = what + " " + target + " " + type;
    const int i = arch.level(target);
    LevelMapping& lm = m.levels[static_cast<size_t>(i)];
    const int kind = type == "temporal" ? 0 : type == "spatial" ? 1 : type == "bypass" ? 2 : -1;
    SYLVA_CHECK(kind >= 0, "[cosa] ", at, ": type must be temporal, spatial or bypass");
    SYLVA_CHECK(!seen[static_cast<size_t>(i)][static_cast<size_t>(kind)], "[cosa] ", at, ": given twice");
    seen[static_cast<size_t>(i)][static_cast<size_t>(kind)] = true;
    if (kind == 2) {
      lm.keep = keep_of(e, at);
      continue;
    }
    const auto factors = parse_factors(get<std::string>(e, "factors", at, "", true), at);
    const std::string perm = check_permutation(get<std::string>(e, "permutation", at, "RSPQCKN", false), at);
    if (kind == 0) {
      lm.temporal = factors;
      lm.temporal_permutation = perm;
    } else {
      lm.spatial = factors;
      lm.spatial_permutation = perm;
      lm.has_spatial = true;
    }
  }
  return m;
}
}  // namespace

namespace {

// A reader's body; a yaml-cpp exception that gets past its checks (a node
// of the wrong kind deep inside: a scalar indexed like a map, say) becomes
// a sylva::Error naming the file and line, never an escaped YAML::Exception.
template <class F>
auto guarded(const std::string& what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const YAML::Exception& e) {
    SYLVA_THROW("[cosa] ", what, ": unexpected YAML structure",
                e.mark.is_null() ? std::string() : " at line " + std::to_string(e.mark.line + 1), ": ", e.msg);
  }
}

}  // namespace

Problem read_problem(const std::string& path) {
  return guarded(path, [&] { return read_problem_unguarded(path); });
}
Arch read_arch(const std::string& path) {
  return guarded(path, [&] { return arch_of(load(path), path, std::filesystem::path(path).stem().string()); });
}
Arch parse_arch(const std::string& yaml, const std::string& name) {
  return guarded(name, [&] { return arch_of(parse_yaml(yaml, name), name, name); });
}
Mapspace read_mapspace(const std::string& path, const Arch& arch) {
  return guarded(path, [&] { return read_mapspace_unguarded(path, arch); });
}
std::vector<std::string> read_layer_list(const std::string& path) {
  return guarded(path, [&] { return read_layer_list_unguarded(path); });
}
Mapping parse_mapping(const std::string& text, const Arch& arch, const std::string& what) {
  return guarded(what, [&] { return parse_mapping_unguarded(text, arch, what); });
}

Mapping read_mapping(const std::string& path, const Arch& arch) {
  SYLVA_CHECK(std::filesystem::exists(path), "[cosa] no such file: ", path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_mapping(text.str(), arch, path);
}

std::string mapping_yaml(const Mapping& m) {
  std::ostringstream os;
  const auto factors = [&](const std::array<int64_t, kDims>& f) {
    for (int d = 0; d < kDims; ++d)
      os << (d ? " " : "") << kDimNames[static_cast<size_t>(d)] << '=' << f[static_cast<size_t>(d)];
  };
  os << "mapping:\n";
  for (size_t i = 0; i < m.levels.size(); ++i) {
    const LevelMapping& l = m.levels[i];
    for (int spatial : {1, 0}) {
      if (spatial && !l.has_spatial) continue;
      os << "- factors: ";
      factors(spatial ? l.spatial : l.temporal);
      os << "\n  permutation: " << (spatial ? l.spatial_permutation : l.temporal_permutation) << "\n  target: "
         << m.level_names[i] << "\n  type: " << (spatial ? "spatial" : "temporal") << "\n";
    }
  }
  for (size_t i = 0; i < m.levels.size(); ++i) {
    for (bool keep : {false, true}) {
      std::vector<const char*> ts;
      for (int t = 0; t < kTensors; ++t)
        if (m.levels[i].keep[static_cast<size_t>(t)] == keep) ts.push_back(tensor_name(t));
      os << (keep ? "  keep:" : "- bypass:");
      if (ts.empty()) os << " []";
      os << "\n";
      for (const char* t : ts) os << "  - " << t << "\n";
    }
    os << "  target: " << m.level_names[i] << "\n  type: bypass\n";
  }
  return os.str();
}

void check_mapping(const Mapping& m, const Problem& p, const Arch& a) {
  SYLVA_CHECK(m.levels.size() == a.levels.size(), "[cosa] the mapping has ", m.levels.size(),
              " levels but architecture '", a.name, "' has ", a.levels.size());
  for (int d = 0; d < kDims; ++d) {
    int64_t prod = 1;
    for (const LevelMapping& l : m.levels) prod *= l.temporal[static_cast<size_t>(d)] * l.spatial[static_cast<size_t>(d)];
    SYLVA_CHECK(prod == p.bounds[static_cast<size_t>(d)], "[cosa] mapping of '", p.name, "': the factors of ",
                kDimNames[static_cast<size_t>(d)], " multiply to ", prod, ", not its bound ",
                p.bounds[static_cast<size_t>(d)]);
  }
  for (size_t i = 0; i < m.levels.size(); ++i) {
    int64_t fan = 1;
    for (int64_t f : m.levels[i].spatial) fan *= f;
    SYLVA_CHECK(fan <= a.fanout(static_cast<int>(i)), "[cosa] mapping of '", p.name, "': level ", a.levels[i].name,
                " spreads over ", fan, " instances but has a fan-out of ", a.fanout(static_cast<int>(i)));
  }
}

}  // namespace sylva::cosa
