// Readers that turn text files into InputGraphs. Every error is a
// sylva::Error naming the file and line (and column for brackets).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sylva/runtime/input_graph.h"

namespace sylva {

/// A PTB-bracketed tree such as "(3 (2 It) (4 (2 's) (3 good)))": every
/// node carries an integer label, leaves carry a word. Vertices are
/// numbered in post-order (children before parents), so the root is the
/// last vertex. graph.ids("labels") holds the labels.
struct BracketedTree {
  InputGraph graph;
  std::vector<std::string> tokens;  // per vertex; empty for internal nodes
};

/// Parses one bracketed tree. Tokens are split on ASCII space and brackets
/// only (SST has U+00A0 inside tokens). Labels must be integers in
/// [0, num_labels). `source` and `line` are used in error messages.
BracketedTree parse_bracketed_tree(std::string_view text, const std::string& source, int line, int num_labels = 5);
/// One tree per line; empty lines are errors. Missing file: sylva::Error.
std::vector<BracketedTree> read_bracketed_trees(const std::string& path, int num_labels = 5);
/// read_bracketed_trees one tree at a time: fn(tree) for each line in
/// order, the tree's tokens freed after (a loader that keeps only the
/// graphs and word ids never holds the whole file's tokens, which it would
/// leave in the heap as freed memory: 10-15 MB for SST's train set).
void for_each_bracketed_tree(const std::string& path, const std::function<void(BracketedTree&&)>& fn,
                             int num_labels = 5);

/// A whitespace-separated token sequence as a chain (vertex i's child is
/// vertex i-1).
struct TokenChain {
  InputGraph graph;
  std::vector<std::string> tokens;
};
/// One sequence per line; empty (all-whitespace) lines are errors.
std::vector<TokenChain> read_token_sequences(const std::string& path);

/// One graph per line: whitespace-separated parent indices, -1 for a root.
/// Rejects non-integers, parents out of range, self-parents and cycles.
std::vector<InputGraph> read_parent_arrays(const std::string& path);

}  // namespace sylva
