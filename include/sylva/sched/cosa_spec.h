// CoSA's inputs and outputs in Timeloop's v1 YAML formats: a layer (the
// problem: R S P Q C K N with strides and dilations), an architecture
// (storage levels, innermost first, and the arithmetic units), a mapspace
// (which tensors each level keeps or bypasses) and a mapping (per level:
// temporal and spatial loop factors with their permutations, and the
// keep/bypass entries). Files are read with yaml-cpp; mappings are written
// in the exact layout timeloop-model reads (see
// shared/data/cosa/examples/resnet50_input5_map.yaml).
//
// @code
// cosa::Problem p = cosa::read_problem("workloads/resnet50/_outputs_input.5.yaml");
// cosa::Arch a = cosa::read_arch("arch/simba.yaml");
// cosa::Mapping m = cosa::read_mapping("map.yaml");
// cosa::check_mapping(m, p, a);                       // sylva::Error naming the level and dimension
// write_file_atomically("out.yaml", cosa::mapping_yaml(m));
// @endcode
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sylva::cosa {

/// The seven loop dimensions of a convolution layer, in Timeloop's order.
enum Dim : uint8_t { R, S, P, Q, C, K, N };
constexpr int kDims = 7;
constexpr std::array<char, kDims> kDimNames{'R', 'S', 'P', 'Q', 'C', 'K', 'N'};
/// The three tensors, in Timeloop's order.
enum Tensor : uint8_t { Weights, Inputs, Outputs };
constexpr int kTensors = 3;
const char* tensor_name(int t);

struct Problem {
  std::string name;  // the file's stem
  std::array<int64_t, kDims> bounds{};
  int64_t w_stride = 1, h_stride = 1, w_dilation = 1, h_dilation = 1;
  int64_t macs() const;
};

struct Level {
  std::string name;
  int64_t entries = 0;    // words per instance; 0: unbounded (DRAM)
  int64_t instances = 1;  // across the chip
  int64_t word_bits = 8;
  int64_t block_size = 1;
  int64_t cluster_size = 1;
  double read_bandwidth = 0, write_bandwidth = 0;  // words per cycle; 0: unlimited
  double multiple_buffering = 1;
  bool dram = false;
  /// pJ per access of one block (block_size words), as Timeloop's
  /// "Vector access energy": the level's `vector-access-energy` if given,
  /// else Timeloop v3.0.3's built-in (PAT) value for the level's
  /// technology and shape where known (pat_access_energy), else NaN.
  double vector_access_energy = 0;
};

struct Arch {
  std::string name;
  int64_t mac_instances = 0, mac_word_bits = 8;
  double mac_energy = 0;  // pJ per MAC: arithmetic `energy` if given, else PAT's (0.25 for 8 bits), else NaN
  std::vector<Level> levels;  // innermost (registers) first, DRAM last
  /// The level's index; sylva::Error naming the architecture otherwise.
  int level(const std::string& name) const;
  /// Spatial fan-out below level i: instances(i - 1) / instances(i), and
  /// MAC instances / instances(0) for i = 0.
  int64_t fanout(int i) const;
};

/// Per level, whether it keeps each tensor (true) or bypasses it.
struct Mapspace {
  std::vector<std::array<bool, kTensors>> keep;  // indexed like Arch::levels
  /// The dimensions a level's spatial loops may run over, indexed like
  /// Arch::levels; empty (the default): every dimension everywhere. What
  /// a machine's fan-out can do: a CPU's SIMD lanes vectorise only along a
  /// dimension its kernel lays out contiguously (cpu_mapspace). schedule()
  /// and random_mapping() place no spatial factor elsewhere.
  std::vector<std::array<bool, kDims>> spatial_dims;
  bool spatial_allowed(int level, int dim) const {
    return spatial_dims.empty() || spatial_dims[static_cast<size_t>(level)][static_cast<size_t>(dim)];
  }
  /// Per level (indexed like Arch::levels; empty, the default: none), a
  /// tensor whose loops that do not index it must be the level's innermost
  /// (the tensor stays put while they run; -1: any order). What a kernel
  /// needs of the order: cpu_mapspace holds the outputs at the level above
  /// L1, so the reduction loops there run inside the micro-kernel's block
  /// with the accumulators in registers. schedule() fixes its loop-order
  /// choice at such a level; random_mapping() and the hybrid search draw
  /// only such orders (apply_stationary).
  std::vector<int> stationary;
  int stationary_at(int level) const { return stationary.empty() ? -1 : stationary[static_cast<size_t>(level)]; }
};

/// Loop factors at one level: a temporal loop nest (permutation: innermost
/// dimension first, as Timeloop writes it) and a spatial fan-out.
struct LevelMapping {
  std::array<int64_t, kDims> temporal{1, 1, 1, 1, 1, 1, 1}, spatial{1, 1, 1, 1, 1, 1, 1};
  std::string temporal_permutation = "RSPQCKN", spatial_permutation = "RSPQCKN";
  bool has_spatial = false;  // a spatial entry is written for this level
  std::array<bool, kTensors> keep{true, true, true};
};

struct Mapping {
  std::vector<std::string> level_names;  // innermost first
  std::vector<LevelMapping> levels;
};

/// A loop permutation (innermost first, as Timeloop writes it) as the
/// dimensions outermost first, any it leaves out outermost; sylva::Error
/// for a letter that is not a dimension.
std::vector<int> loops_outer_first(const std::string& innermost_first);

/// A mapping of `a` with every factor 1: level names, keep/bypass from
/// `ms`, a spatial entry where a level fans out, default loop orders.
Mapping blank_mapping(const Arch& a, const Mapspace& ms);

/// Timeloop v3.0.3's PAT energy (pJ) per block access of a storage level,
/// for the level shapes PAT was measured on here: DRAM (12.5 pJ per bit)
/// and the five SRAM levels of shared/data/cosa's Simba arch (entries x
/// word bits x block size; fitted from the golden set's energy breakdowns,
/// which they reproduce to 1e-6). NaN for any other shape: give the level a
/// `vector-access-energy` then.
double pat_access_energy(const Level& l);

Problem read_problem(const std::string& path);
Arch read_arch(const std::string& path);
/// The same from YAML text; `name` names the architecture and the messages.
Arch parse_arch(const std::string& yaml, const std::string& name);
/// The mapspace's keep/bypass constraints for `arch`; levels it does not
/// name keep every tensor (DRAM).
Mapspace read_mapspace(const std::string& path, const Arch& arch);
Mapping read_mapping(const std::string& path, const Arch& arch);
/// A network's layers.yaml (a list of layer names) as the paths of the
/// problem files beside it; sylva::Error naming the line of a missing one.
std::vector<std::string> read_layer_list(const std::string& path);
/// Parses mapping YAML text (`what` names it in errors).
Mapping parse_mapping(const std::string& text, const Arch& arch, const std::string& what = "mapping");

/// The mapping in Timeloop's v1 layout: a temporal entry per level (and a
/// spatial one where the level has fan-out), then a bypass entry per level.
std::string mapping_yaml(const Mapping& m);

/// sylva::Error unless every dimension's factors multiply to its bound and
/// no level's spatial factors exceed its fan-out.
void check_mapping(const Mapping& m, const Problem& p, const Arch& a);

}  // namespace sylva::cosa
