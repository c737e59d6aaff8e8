// Sentiment treebanks for the Tree-LSTM example, tests and benchmarks:
// the Stanford Sentiment Treebank, or a synthetic one made by the code.
#pragma once

#include <string>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::examples {

/// Trees with per-vertex ids "words" (-1 on internal nodes) and "labels"
/// (0..4 on every node); the root is the last vertex of each tree.
struct Treebank {
  std::vector<InputGraph> train, dev, test;
  Vocabulary vocab;    // built from train, plus "<unk>" for unseen words
  std::string source;  // where it came from
};

/// Reads train.txt, dev.txt and test.txt from `dir`.
Treebank load_sst(const std::string& dir);

/// The SST directory: `flag` if given, else $SYLVA_DATA/sst, else
/// shared/data/sst found by walking up from the working directory. Returns
/// "" if none exists; `looked` receives every place tried.
std::string find_sst(const std::string& flag, std::vector<std::string>& looked);

/// A synthetic treebank with a compositional sentiment rule: words carry
/// values (positive, negative, neutral), "not"/"never" negate their sibling
/// subtree and "very"/"really" double it, so the label of a phrase depends
/// on the tree structure, not only on its bag of words. Labels map the
/// value v to 5 classes (v <= -2: 0, -1: 1, 0: 2, 1: 3, >= 2: 4).
Treebank synthetic_treebank(uint64_t seed, int train, int dev, int test);

}  // namespace sylva::examples
