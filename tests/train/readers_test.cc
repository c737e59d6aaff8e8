#include "sylva/train/readers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

namespace fs = std::filesystem;

std::vector<int32_t> to_vec(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

// The first three trees of SST dev.txt, verbatim.
const char* const kSstDev[] = {
    "(3 (2 It) (4 (4 (2 's) (4 (3 (2 a) (4 (3 lovely) (2 film))) (3 (2 with) (4 (3 (3 lovely) (2 performances)) "
    "(2 (2 by) (2 (2 (2 Buy) (2 and)) (2 Accorsi))))))) (2 .)))",
    "(2 (2 (1 No) (2 one)) (1 (1 (2 goes) (2 (1 (2 (2 unindicted) (2 here)) (2 ,)) (2 (2 which) (3 (2 (2 is) "
    "(2 probably)) (3 (2 for) (4 (2 the) (4 best))))))) (2 .)))",
    "(3 (2 And) (4 (3 (2 if) (1 (2 you) (1 (2 (2 (2 're) (1 not)) (2 nearly)) (4 (3 (3 moved) (2 (2 to) (1 tears))) "
    "(2 (2 by) (2 (2 (2 a) (2 couple)) (2 (2 of) (2 scenes)))))))) (2 (2 ,) (2 (2 you) (2 (2 (2 've) (1 (2 got) "
    "(2 (3 (2 ice) (2 water)) (2 (2 in) (2 (2 your) (2 veins)))))) (2 .))))))",
};

// SST train.txt line 4342: "8<U+00A0>1\/2" is one token.
const char* const kSstNbsp =
    "(1 (1 (2 (2 A) (2 (2 mimetic) (2 approximation))) (1 (2 of) (1 (4 better) (2 films)))) (2 (2 (2 like) "
    "(2 (2 (0 Contempt) (2 and)) (2 8\xC2\xA0"
    "1\\/2))) (2 .)))";

class Readers : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::random_device rd;
    const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           ("sylva_readers_" + std::string(info->name()) + "_" + std::to_string(rd()) + "_" + std::to_string(tick));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  // Writes two good trees and then `bad` as line 3; returns read_bracketed_trees' error.
  std::string tree_error(const std::string& bad) {
    const std::string path = write("trees.txt", "(2 a)\n(3 (2 b) (2 c))\n" + bad + "\n(2 d)\n");
    return error_of([&] { read_bracketed_trees(path); });
  }
  fs::path dir_;
};

// Children precede parents, the root is last and the only root.
void expect_post_order(const InputGraph& g) {
  for (int32_t v = 0; v < g.num_vertices(); ++v)
    for (int32_t c : g.children(v)) EXPECT_LT(c, v) << g.source();
  EXPECT_EQ(g.roots(), (std::vector<int32_t>{g.num_vertices() - 1})) << g.source();
}

int32_t count_leaves(const BracketedTree& t) {
  int32_t leaves = 0;
  for (int32_t v = 0; v < t.graph.num_vertices(); ++v) {
    const bool leaf = t.graph.children(v).empty();
    EXPECT_EQ(leaf, !t.tokens[v].empty()) << t.graph.source() << " vertex " << v;
    leaves += leaf;
  }
  return leaves;
}

// ---- bracketed trees: positive -------------------------------------------

TEST_F(Readers, ParseSmallTree) {
  BracketedTree t = parse_bracketed_tree("(3 (2 It) (4 (2 's) (3 good)))", "x.txt", 4);
  ASSERT_EQ(t.graph.num_vertices(), 5);
  EXPECT_EQ(t.tokens, (std::vector<std::string>{"It", "'s", "good", "", ""}));
  EXPECT_EQ(t.graph.ids("labels"), (std::vector<int32_t>{2, 2, 3, 4, 3}));
  EXPECT_EQ(to_vec(t.graph.children(4)), (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(to_vec(t.graph.children(3)), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(t.graph.source(), "x.txt:4");
  expect_post_order(t.graph);
}

TEST_F(Readers, SingleLeafTree) {
  BracketedTree t = parse_bracketed_tree("(0 word)", "x.txt", 1);
  ASSERT_EQ(t.graph.num_vertices(), 1);
  EXPECT_EQ(t.tokens[0], "word");
  EXPECT_EQ(t.graph.ids("labels"), (std::vector<int32_t>{0}));
}

TEST_F(Readers, TabsAndCarriageReturnSeparate) {
  BracketedTree t = parse_bracketed_tree("(2\t(2 a)  (3\tb))\r", "x.txt", 1);
  EXPECT_EQ(t.tokens, (std::vector<std::string>{"a", "b", ""}));
}

TEST_F(Readers, NonBreakingSpaceStaysInToken) {
  BracketedTree t = parse_bracketed_tree(kSstNbsp, "train.txt", 4342);
  const std::string expected = "8\xC2\xA0" "1\\/2";
  ASSERT_EQ(expected.size(), 7u);
  int found = 0;
  for (const std::string& tok : t.tokens) found += tok == expected;
  EXPECT_EQ(found, 1);
  EXPECT_EQ(count_leaves(t), 11);
  EXPECT_EQ(t.graph.num_vertices(), 2 * 11 - 1);
  EXPECT_EQ(t.graph.ids("labels").back(), 1);
  // Other UTF-8 passes through untouched too.
  EXPECT_EQ(parse_bracketed_tree("(2 caf\xC3\xA9)", "x", 1).tokens[0], "caf\xC3\xA9");
}

// for_each_bracketed_tree hands over the trees read_bracketed_trees
// returns, one at a time and in order, and stops with the same error at a
// bad line after the good ones before it.
TEST_F(Readers, OneTreeAtATimeGivesTheSameTreesAndErrors) {
  std::string text;
  for (const char* line : kSstDev) text += std::string(line) + "\n";
  const std::string path = write("one_at_a_time.txt", text);
  const std::vector<BracketedTree> all = read_bracketed_trees(path);
  size_t seen = 0;
  for_each_bracketed_tree(path, [&](BracketedTree&& t) {
    ASSERT_LT(seen, all.size());
    EXPECT_EQ(t.tokens, all[seen].tokens);
    EXPECT_EQ(t.graph.ids("labels"), all[seen].graph.ids("labels"));
    EXPECT_EQ(t.graph.source(), all[seen].graph.source());
    ++seen;
  });
  EXPECT_EQ(seen, all.size());

  const std::string bad = write("bad_third.txt", text.substr(0, text.find('\n', text.find('\n') + 1) + 1) + "(2 a\n");
  seen = 0;
  const std::string msg = error_of([&] { for_each_bracketed_tree(bad, [&](BracketedTree&&) { ++seen; }); });
  EXPECT_EQ(seen, 2u);
  EXPECT_EQ(msg, error_of([&] { read_bracketed_trees(bad); }));
  EXPECT_CONTAINS(msg, "bad_third.txt:3");
}

TEST_F(Readers, LabelRangeFollowsNumLabels) {
  EXPECT_EQ(parse_bracketed_tree("(7 a)", "x", 1, 10).graph.ids("labels")[0], 7);
  EXPECT_CONTAINS(error_of([] { parse_bracketed_tree("(7 a)", "x", 1, 5); }), "label 7 out of range [0, 5)");
}

TEST_F(Readers, RealSstLines) {
  std::string text;
  for (const char* line : kSstDev) text += std::string(line) + "\n";
  const std::vector<BracketedTree> trees = read_bracketed_trees(write("dev_head.txt", text));
  ASSERT_EQ(trees.size(), 3u);
  const int32_t root_labels[] = {3, 2, 3};
  for (size_t i = 0; i < trees.size(); ++i) {
    const BracketedTree& t = trees[i];
    EXPECT_EQ(t.graph.num_vertices(), 2 * count_leaves(t) - 1);
    EXPECT_EQ(t.graph.ids("labels").back(), root_labels[i]);
    EXPECT_EQ(t.graph.max_arity(), 2);
    EXPECT_EQ(t.graph.source(), (dir_ / "dev_head.txt").string() + ":" + std::to_string(i + 1));
    expect_post_order(t.graph);
  }
  // Post-order visits leaves left to right.
  std::string sentence;
  for (const std::string& tok : trees[0].tokens)
    if (!tok.empty()) sentence += (sentence.empty() ? "" : " ") + tok;
  EXPECT_EQ(sentence, "It 's a lovely film with lovely performances by Buy and Accorsi .");
}

// ---- bracketed trees: errors (file:line:col) -----------------------------

TEST_F(Readers, UnbalancedCloseBracket) {
  const std::string msg = tree_error("(2 a))");
  EXPECT_CONTAINS(msg, "[reader] ");
  EXPECT_CONTAINS(msg, "trees.txt:3:6: unbalanced bracket: ')' with no matching '('");
}

TEST_F(Readers, UnbalancedOpenBracket) {
  const std::string msg = tree_error("(2 (3 a)");
  EXPECT_CONTAINS(msg, "trees.txt:3:1: unbalanced bracket: '(' with no matching ')'");
}

TEST_F(Readers, MissingLabel) {
  const std::string msg = tree_error("((2 a))");
  EXPECT_CONTAINS(msg, "trees.txt:3:2: missing label");
}

TEST_F(Readers, NonIntegerLabel) {
  EXPECT_CONTAINS(tree_error("(x a)"), "trees.txt:3:2: label 'x' is not an integer");
  EXPECT_CONTAINS(tree_error("(2 (3x a))"), "trees.txt:3:5: label '3x' is not an integer");
  EXPECT_CONTAINS(tree_error("(99999999999 a)"), "trees.txt:3:2: label '99999999999' is not an integer");
}

TEST_F(Readers, LabelOutOfRange) {
  EXPECT_CONTAINS(tree_error("(5 a)"), "trees.txt:3:2: label 5 out of range [0, 5)");
  EXPECT_CONTAINS(tree_error("(-1 a)"), "trees.txt:3:2: label -1 out of range [0, 5)");
}

TEST_F(Readers, EmptyNode) {
  EXPECT_CONTAINS(tree_error("(2 (2 a) ())"), "trees.txt:3:10: empty node \"()\"");
  EXPECT_CONTAINS(tree_error("()"), "trees.txt:3:1: empty node");
}

TEST_F(Readers, LabelWithoutChildren) {
  EXPECT_CONTAINS(tree_error("(2 (3) (2 a))"), "trees.txt:3:4: node (3) has a label but no word or subtree");
}

TEST_F(Readers, LeafWithTwoWords) {
  EXPECT_CONTAINS(tree_error("(2 a b)"), "trees.txt:3:6: leaf at column 1 has two words ('a' and 'b')");
}

TEST_F(Readers, MixedWordsAndSubtrees) {
  EXPECT_CONTAINS(tree_error("(2 a (2 b))"), "trees.txt:3:6: node at column 1 mixes a word");
  EXPECT_CONTAINS(tree_error("(2 (2 a) b)"), "trees.txt:3:10: node at column 1 mixes subtrees and a word ('b')");
}

TEST_F(Readers, TrailingTokens) {
  EXPECT_CONTAINS(tree_error("(2 a) b"), "trees.txt:3:7: trailing tokens after the tree: 'b'");
  EXPECT_CONTAINS(tree_error("(2 a) (2 b)"), "trees.txt:3:7: trailing tokens after the tree");
}

TEST_F(Readers, WordOutsideTree) {
  EXPECT_CONTAINS(tree_error("a (2 b)"), "trees.txt:3:1: expected '(' to start a tree, got 'a'");
}

TEST_F(Readers, EmptyTreeLine) {
  EXPECT_CONTAINS(tree_error(""), "trees.txt:3:1: empty line");
  EXPECT_CONTAINS(tree_error(" \t "), "trees.txt:3:1: empty line");
}

TEST_F(Readers, MissingTreeFile) {
  const std::string path = (dir_ / "no_such_trees.txt").string();
  const std::string msg = error_of([&] { read_bracketed_trees(path); });
  EXPECT_CONTAINS(msg, "[reader] cannot open '" + path + "'");
}

TEST_F(Readers, DirectoryIsNotAFile) {
  const std::string msg = error_of([&] { read_bracketed_trees(dir_.string()); });
  EXPECT_CONTAINS(msg, dir_.string());
  EXPECT_CONTAINS(msg, "is a directory");
}

// ---- token sequences -----------------------------------------------------

TEST_F(Readers, TokenSequences) {
  const std::string path = write("seq.txt", "the cat  sat\n\tx\xC2\xA0y z\r\n");
  const std::vector<TokenChain> seqs = read_token_sequences(path);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0].tokens, (std::vector<std::string>{"the", "cat", "sat"}));
  EXPECT_EQ(seqs[1].tokens, (std::vector<std::string>{"x\xC2\xA0y", "z"}));
  const InputGraph& g = seqs[0].graph;
  ASSERT_EQ(g.num_vertices(), 3);
  EXPECT_TRUE(g.children(0).empty());
  EXPECT_EQ(to_vec(g.children(1)), (std::vector<int32_t>{0}));
  EXPECT_EQ(to_vec(g.children(2)), (std::vector<int32_t>{1}));
  EXPECT_EQ(g.source(), path + ":1");
  EXPECT_EQ(seqs[1].graph.source(), path + ":2");
}

TEST_F(Readers, TokenSequenceEmptyLine) {
  const std::string path = write("seq.txt", "a b\n\nc\n");
  EXPECT_CONTAINS(error_of([&] { read_token_sequences(path); }), "seq.txt:2: empty line");
}

TEST_F(Readers, TokenSequenceWhitespaceLine) {
  const std::string path = write("seq.txt", "a b\nc\n \t \r\n");
  EXPECT_CONTAINS(error_of([&] { read_token_sequences(path); }), "seq.txt:3: empty line");
}

TEST_F(Readers, MissingSequenceFile) {
  const std::string path = (dir_ / "nope.txt").string();
  EXPECT_CONTAINS(error_of([&] { read_token_sequences(path); }), "cannot open '" + path + "'");
}

// ---- parent arrays -------------------------------------------------------

TEST_F(Readers, ParentArrays) {
  const std::string path = write("par.txt", "-1 0 0 1\n3 3 -1\t2 3\n-1 -1 0\n-1\n");
  const std::vector<InputGraph> gs = read_parent_arrays(path);
  ASSERT_EQ(gs.size(), 4u);
  EXPECT_EQ(to_vec(gs[0].children(0)), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(to_vec(gs[0].children(1)), (std::vector<int32_t>{3}));
  EXPECT_EQ(gs[0].roots(), (std::vector<int32_t>{0}));
  EXPECT_EQ(to_vec(gs[1].children(3)), (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(gs[1].roots(), (std::vector<int32_t>{2}));
  EXPECT_EQ(gs[2].roots(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(gs[3].num_vertices(), 1);
  EXPECT_EQ(gs[1].source(), path + ":2");
}

TEST_F(Readers, ParentArrayCycle) {
  const std::string path = write("par.txt", "-1 0\n-1 2 1\n");
  const std::string msg = error_of([&] { read_parent_arrays(path); });
  EXPECT_CONTAINS(msg, "par.txt:2");
  EXPECT_CONTAINS(msg, "cycle");
}

TEST_F(Readers, ParentArrayAllCyclic) {
  const std::string path = write("par.txt", "1 0\n");
  const std::string msg = error_of([&] { read_parent_arrays(path); });
  EXPECT_CONTAINS(msg, "par.txt:1");
  EXPECT_CONTAINS(msg, "cycle");
}

TEST_F(Readers, ParentArrayOutOfRange) {
  const std::string path = write("par.txt", "-1 0\n-1 0 7\n");
  const std::string msg = error_of([&] { read_parent_arrays(path); });
  EXPECT_CONTAINS(msg, "par.txt:2");
  EXPECT_CONTAINS(msg, "vertex 2 has parent 7 out of range [0, 3)");
  const std::string neg = write("neg.txt", "-3 0\n");
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(neg); }), "neg.txt:1: vertex 0 has parent -3");
}

TEST_F(Readers, ParentArraySelfParent) {
  const std::string path = write("par.txt", "-1\n-1 0\n-1 1\n");
  const std::string msg = error_of([&] { read_parent_arrays(path); });
  EXPECT_CONTAINS(msg, "par.txt:3");
  EXPECT_CONTAINS(msg, "vertex 1 is its own parent");
}

TEST_F(Readers, ParentArrayNonInteger) {
  const std::string path = write("par.txt", "-1 0\n-1 3x 0\n");
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(path); }), "par.txt:2:4: parent of vertex 1 is '3x'");
  const std::string big = write("big.txt", "-1 99999999999\n");
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(big); }), "big.txt:1:4: parent of vertex 1 is '99999999999'");
  const std::string frac = write("frac.txt", "-1 0.5\n");
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(frac); }), "frac.txt:1:4: parent of vertex 1 is '0.5'");
}

TEST_F(Readers, ParentArrayEmptyLine) {
  const std::string path = write("par.txt", "-1 0\n  \n");
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(path); }), "par.txt:2: empty line");
}

TEST_F(Readers, MissingParentFile) {
  const std::string path = (dir_ / "nope.txt").string();
  EXPECT_CONTAINS(error_of([&] { read_parent_arrays(path); }), "cannot open '" + path + "'");
}

// ---- the real SST dev split ----------------------------------------------

// SYLVA_DATA, else <SYLVA_TEST_SOURCE_DIR>/../shared/data; nullopt if neither.
std::optional<fs::path> data_dir() {
  if (const char* d = std::getenv("SYLVA_DATA"); d && *d) return fs::path(d);
  if (const char* s = std::getenv("SYLVA_TEST_SOURCE_DIR"); s && *s) {
    const fs::path p = fs::path(s) / ".." / "shared" / "data";
    if (fs::is_directory(p)) return p;
  }
  return std::nullopt;
}

TEST(ReadersData, SstDevSplit) {
  const std::optional<fs::path> dir = data_dir();
  if (!dir) GTEST_SKIP() << "no data: set SYLVA_DATA or SYLVA_TEST_SOURCE_DIR (with ../shared/data beside it)";
  const fs::path path = *dir / "sst" / "dev.txt";
  ASSERT_TRUE(fs::is_regular_file(path)) << path << " missing under the data directory";
  const std::vector<BracketedTree> trees = read_bracketed_trees(path.string());
  ASSERT_EQ(trees.size(), 1101u);
  int64_t vertices = 0;
  int64_t leaves = 0;
  for (const BracketedTree& t : trees) {
    const int32_t l = count_leaves(t);
    EXPECT_EQ(t.graph.num_vertices(), 2 * l - 1) << t.graph.source();
    vertices += t.graph.num_vertices();
    leaves += l;
  }
  EXPECT_EQ(vertices, 41447);
  EXPECT_EQ(leaves, 21274);
}

}  // namespace
}  // namespace sylva
