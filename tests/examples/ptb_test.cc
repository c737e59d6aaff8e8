// The PTB reader and the Var-/Fixed-LSTM sample builders, on small
// fixtures written by the tests (edge cases, malformed input) and, when the
// shared data is present, on the real corpus.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ptb.h"
#include "support/test_util.h"

namespace sylva::examples {
namespace {
namespace fs = std::filesystem;

class PtbReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sylva_ptb_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

std::vector<std::string> tokens_of(const Sentence& s, const Vocabulary& v) {
  std::vector<std::string> out;
  for (int32_t id : s) out.push_back(v.token(id));
  return out;
}

using Words = std::vector<std::string>;

TEST_F(PtbReader, AppendsEosAndKeepsEmptyLinesAsSentences) {
  Vocabulary v;
  // Leading, doubled and trailing spaces, a tab, a CRLF ending, an empty line.
  std::vector<Sentence> s = read_ptb(write("a.txt", " the cat  sat \n\nthe\tdog <unk>\r\n"), v, true);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(tokens_of(s[0], v), (Words{"the", "cat", "sat", "<eos>"}));
  EXPECT_EQ(tokens_of(s[1], v), (Words{"<eos>"}));
  EXPECT_EQ(tokens_of(s[2], v), (Words{"the", "dog", "<unk>", "<eos>"}));
  EXPECT_EQ(v.size(), 6);  // <eos> the cat sat dog <unk>
  EXPECT_EQ(v.id("<eos>"), 0);
  EXPECT_EQ(count_tokens(s), 9);
}

TEST_F(PtbReader, EmptyFileAndMissingFinalNewline) {
  Vocabulary v;
  EXPECT_TRUE(read_ptb(write("empty.txt", ""), v, true).empty());
  std::vector<Sentence> s = read_ptb(write("nl.txt", "a b\nc"), v, true);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(tokens_of(s[1], v), (Words{"c", "<eos>"}));
}

TEST_F(PtbReader, KeepsNonAsciiBytesInsideTokens) {
  Vocabulary v;
  std::vector<Sentence> s = read_ptb(write("u.txt", "caf\xc3\xa9 na\xc3\xafve\xc2\xa0x\n"), v, true);
  ASSERT_EQ(s.size(), 1u);
  // U+00A0 (no-break space) is not ASCII whitespace: it stays in the token.
  EXPECT_EQ(tokens_of(s[0], v), (Words{"caf\xc3\xa9", "na\xc3\xafve\xc2\xa0x", "<eos>"}));
}

TEST_F(PtbReader, UnknownWordsOfOtherSplitsMapToUnk) {
  const std::string dir = dir_.string();
  write("ptb.train.txt", "a b <unk>\nb c\n");
  write("ptb.valid.txt", "a zebra\n");
  write("ptb.test.txt", "\n c quokka b\n");
  PtbCorpus c = load_ptb(dir);
  EXPECT_EQ(c.vocab.size(), 5);  // <eos> a b <unk> c
  EXPECT_EQ(tokens_of(c.valid[0], c.vocab), (Words{"a", "<unk>", "<eos>"}));
  ASSERT_EQ(c.test.size(), 2u);
  EXPECT_EQ(tokens_of(c.test[1], c.vocab), (Words{"c", "<unk>", "b", "<eos>"}));
}

TEST_F(PtbReader, AnEmptySplitIsAClearError) {
  const std::string dir = dir_.string();
  write("ptb.train.txt", "");
  write("ptb.valid.txt", "a b\n");
  write("ptb.test.txt", "b a\n");
  std::string msg = test::error_of([&] { load_ptb(dir); });
  EXPECT_CONTAINS(msg, "ptb.train.txt holds no sentences");
  write("ptb.train.txt", "a b\n");
  write("ptb.test.txt", "");
  EXPECT_CONTAINS(test::error_of([&] { load_ptb(dir); }), "ptb.test.txt holds no sentences");
}

TEST_F(PtbReader, ClearErrors) {
  Vocabulary v;
  EXPECT_CONTAINS(test::error_of([&] { read_ptb((dir_ / "missing.txt").string(), v, true); }),
                  "cannot open PTB file");
  EXPECT_CONTAINS(test::error_of([&] { load_ptb((dir_ / "nowhere").string()); }), "ptb.train.txt");
  // A frozen vocabulary without <unk>: the unknown word is named with file:line.
  Vocabulary frozen;
  frozen.add("<eos>");
  frozen.add("a");
  std::string msg = test::error_of([&] { read_ptb(write("f.txt", "a\na wombat\n"), frozen, false); });
  EXPECT_CONTAINS(msg, "f.txt:2");
  EXPECT_CONTAINS(msg, "'wombat'");
  Vocabulary no_eos;
  no_eos.add("a");
  EXPECT_CONTAINS(test::error_of([&] { read_ptb(write("g.txt", "a\n"), no_eos, false); }), "no <eos>");
}

TEST(PtbSamples, SentenceChainsPredictEveryToken) {
  std::vector<Sentence> s{{3, 4, 5, 0}, {0}};
  std::vector<InputGraph> g = sentence_chains(s, 0, 6, "x.txt");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].num_vertices(), 4);
  EXPECT_EQ(g[0].ids("words"), (std::vector<int32_t>{0, 3, 4, 5}));
  EXPECT_EQ(g[0].ids("labels"), (std::vector<int32_t>{3, 4, 5, 0}));
  EXPECT_EQ(g[0].children(2)[0], 1);  // a chain: vertex i reads vertex i-1
  EXPECT_EQ(g[1].ids("words"), (std::vector<int32_t>{0}));
  EXPECT_EQ(g[1].source(), "x.txt:2");
  std::string msg = test::error_of([&] { sentence_chains({{1, 2}, {1, 9, 0}}, 0, 6, "y.txt"); });
  EXPECT_CONTAINS(msg, "y.txt:2");
  EXPECT_CONTAINS(msg, "out of range");
}

TEST(PtbSamples, StreamChainsCutTheStreamWithoutDroppingTokens) {
  std::vector<Sentence> s{{1, 2, 0}, {3, 0}, {4, 5, 6, 0}};  // stream of 9 tokens
  std::vector<InputGraph> g = stream_chains(s, 3, 7, "s");
  ASSERT_EQ(g.size(), 3u);  // 8 predictions: 3 + 3 + 2
  EXPECT_EQ(g[0].ids("words"), (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(g[0].ids("labels"), (std::vector<int32_t>{2, 0, 3}));
  EXPECT_EQ(g[1].ids("words"), (std::vector<int32_t>{3, 0, 4}));
  EXPECT_EQ(g[2].ids("words"), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(g[2].ids("labels"), (std::vector<int32_t>{6, 0}));
  EXPECT_CONTAINS(test::error_of([&] { stream_chains(s, 0, 7, "s"); }), "length must be >= 1");
  EXPECT_CONTAINS(test::error_of([&] { stream_chains(s, 4, 6, "s"); }), "out of range");
}

TEST(PtbData, RealCorpusHasTheStandardVocabulary) {
  const std::string dir = test::data_dir();
  if (dir.empty() || !fs::exists(fs::path(dir) / "ptb" / "ptb.train.txt")) GTEST_SKIP() << "shared PTB data not found";
  PtbCorpus c = load_ptb((fs::path(dir) / "ptb").string());
  EXPECT_EQ(c.vocab.size(), 10000);  // Mikolov's 10k types including <eos>
  // Line and word counts of the files (wc): 42068 lines, 887521 words.
  EXPECT_EQ(c.train.size(), 42068u);
  EXPECT_EQ(count_tokens(c.train), 887521 + 42068);
  EXPECT_EQ(c.valid.size(), 3370u);
  EXPECT_EQ(c.test.size(), 3761u);
}

}  // namespace
}  // namespace sylva::examples
