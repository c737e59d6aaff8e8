// Seeded generators of sample graphs: random and complete trees, chains,
// random DAGs. For tests, benchmarks and synthetic workloads (Tree-FC).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sylva/runtime/input_graph.h"

namespace sylva {

// Every generator that draws random numbers takes the caller's engine, so
// several generators compose deterministically: the same seed and the same
// sequence of calls give the same graphs on every run (with libstdc++'s
// distributions). Arguments out of range throw sylva::Error tagged
// [generators], naming the function and the value.
//
//   std::mt19937_64 rng(7);
//   InputGraph t = random_binary_tree(rng, 16, "tree 0");  // 31 vertices, root last
//   InputGraph c = complete_binary_tree(8, "tree 1");       // 15 vertices
//   std::vector<InputGraph> s = chains(random_lengths(rng, 4, 5, 40), "sentence");

/// Random tree grown top-down: every internal vertex has between 1 and
/// `max_arity` child slots, and at most `max_vertices` vertices in all.
/// With `allow_holes` some slots (never a vertex's last) are absent (-1).
/// Ids are in post-order (children before parents, root last).
/// Requires max_vertices >= 1 and max_arity >= 1.
InputGraph random_tree(std::mt19937_64& rng, int32_t max_vertices, int32_t max_arity, bool allow_holes,
                       const std::string& source);

/// Full binary tree (every internal vertex has exactly two children) with
/// `leaves` leaves, its shape drawn uniformly among all such shapes (Rémy's
/// algorithm). 2·leaves − 1 vertices in post-order, root last. Requires
/// 1 <= leaves <= 2^30.
InputGraph random_binary_tree(std::mt19937_64& rng, int32_t leaves, const std::string& source);

/// The complete binary tree with `leaves` leaves (a power of two, so all
/// leaves have the same depth): 2·leaves − 1 vertices in post-order (every
/// child id is smaller than its parent's, left subtree before right, root
/// last). Requires leaves to be a power of two in [1, 2^30].
InputGraph complete_binary_tree(int32_t leaves, const std::string& source);

/// One InputGraph::chain per entry of `lengths`, with sources
/// "<source_prefix> 0", "<source_prefix> 1", ... Every length must be >= 1.
std::vector<InputGraph> chains(std::span<const int32_t> lengths, const std::string& source_prefix);

/// `count` lengths drawn uniformly from [min_len, max_len]. Requires
/// count >= 0 and 1 <= min_len <= max_len.
std::vector<int32_t> random_lengths(std::mt19937_64& rng, int32_t count, int32_t min_len, int32_t max_len);

/// Random DAG on `n` vertices: vertex v > 0 has 0..max_fanin child slots,
/// each drawn uniformly from the vertices < v (a vertex may be the child of
/// several parents, and a parent may list a child twice), so ids are a
/// topological order. Requires n >= 1 and max_fanin >= 0.
InputGraph random_dag(std::mt19937_64& rng, int32_t n, int32_t max_fanin, const std::string& source);

}  // namespace sylva
