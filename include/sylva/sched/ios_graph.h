// CNN graphs in the IOS project's JSON format (see shared/data/README.md
// §4): reading, the operator DAG of a block, cutting large blocks into
// parts, writing a found schedule back into `stages`, and a DOT dump.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "sylva/sched/ios.h"

namespace sylva::ios {

/// Channels [begin, end) of node `node`'s output.
struct ValueRef {
  std::string node;
  int64_t begin = 0, end = 0;
};
/// An input term: values summed; a node's terms are concatenated along channels.
using Term = std::vector<ValueRef>;

struct CnnNode {
  std::string type;  // placeholder, conv, pool, identity, element, relu, activation, sequential
  std::string name;
  std::vector<Term> inputs;
  std::array<int64_t, 3> output_shape{};  // C, H, W (batch excluded)
  // conv and pool
  int64_t out_channels = 0, groups = 1;
  std::array<int64_t, 2> kernel{}, stride{}, padding{};
  std::string act;        // conv: relu, sigmoid, tanh, identity
  std::string pool_type;  // max, avg, global_max, global_avg
  std::string op;         // element: add, mul; activation: its function
  std::vector<CnnNode> nodes;  // sequential: run as one unit
  /// Multiply-adds of one sample (conv; sequential: its convs), 0 for the rest.
  double macs() const;
};

struct CnnBlock {
  CnnNode enter;               // the previous block's output
  std::vector<CnnNode> inner;
  CnnNode exit;
  /// The schedule: stages, each a list of groups of op names run in order.
  std::vector<std::vector<std::vector<std::string>>> stages;
  /// The operators to schedule: inner nodes, then the exit node.
  std::vector<const CnnNode*> ops() const;
};

struct CnnGraph {
  std::string name;
  CnnNode input;
  std::vector<CnnBlock> blocks;
  std::string source;  // the file read (for messages and write-back)
};

/// Reads a graph; sylva::Error naming the file, the block and the field on
/// malformed input, unknown node types, or references to unknown nodes.
CnnGraph read_ios_graph(const std::string& path);

/// IOS's operator merge for convolutions: convolutions that read the same
/// input terms with the same stride, activation and output size (groups 1)
/// run as one convolution with their output channels stacked. Kernels are
/// zero-padded to the largest and centred, which keeps each member's output
/// only if its padding is the merged padding less the centring offset:
/// (K - k) / 2 + p must be the same for every member, per dimension.
struct MergedConv {
  CnnNode conv;                  // the merged convolution; its name joins the members' with '+'
  std::vector<int64_t> offsets;  // output channel offset of each member, in the order given
};
/// The merge of `convs` (two or more), or nullopt with the reason in `why`.
std::optional<MergedConv> merge_convs(const std::vector<const CnnNode*>& convs, std::string* why = nullptr);

/// The operator DAG of a block with more than 64 operators cut first: parts
/// of at most `max_ops` operators, consecutive in a topological order, each
/// as its own OpDag over `ops` (indices into CnnBlock::ops()).
struct BlockPart {
  std::vector<int> ops;
  OpDag dag;
};
std::vector<BlockPart> block_parts(const CnnBlock& block, int max_ops = 64);
/// The parts given as lists of op names (e.g. the IOS project's
/// nasnet_large.parts.json): every operator in exactly one part, no edge
/// from a later part to an earlier one; sylva::Error naming the op otherwise.
std::vector<BlockPart> block_parts(const CnnBlock& block, const std::vector<std::vector<std::string>>& parts);
/// Reads a parts file: a JSON list of lists of op names.
std::vector<std::vector<std::string>> read_parts(const std::string& path);

/// The stages of `plan` for `part`, as op names (the JSON `stages` form).
/// Merged stages are an error: merging rewrites the graph's nodes, which
/// this format keeps elsewhere.
std::vector<std::vector<std::vector<std::string>>> stage_names(const CnnBlock& block, const BlockPart& part,
                                                                const StagePlan& plan);

/// Writes `source` again with each block's `stages` replaced by `stages[b]`
/// (everything else unchanged), atomically.
void write_ios_graph(const std::string& source, const std::string& out,
                     const std::vector<std::vector<std::vector<std::vector<std::string>>>>& stages);

/// Graphviz: one cluster per stage, one per concurrent group, the DAG's edges.
std::string plan_dot(const OpDag& dag, const StagePlan& plan, const std::vector<std::string>& names);

}  // namespace sylva::ios
