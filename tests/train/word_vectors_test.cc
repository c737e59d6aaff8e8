#include "sylva/train/word_vectors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

namespace fs = std::filesystem;

class WordVectorsTest : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("sylva_wv_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(WordVectorsTest, LoadsGloveText) {
  const std::string p = write("glove.txt",
                              "the 0.1 -0.2 3e-1\n"
                              ", 1 2 3\r\n"       // CRLF line
                              "caf\xc3\xa9 -1.5 0 2.25 \n"  // UTF-8 word, trailing space
                              "tab\tword 4 5 6");  // no final newline; tabs belong to the word
  const WordVectors wv = load_word_vectors(p);
  EXPECT_EQ(wv.dim, 3);
  ASSERT_EQ(wv.vocab.size(), 4);
  EXPECT_EQ(wv.vocab.token(0), "the");
  EXPECT_EQ(wv.vocab.token(1), ",");
  EXPECT_EQ(wv.vocab.token(2), "caf\xc3\xa9");
  EXPECT_EQ(wv.vocab.token(3), "tab\tword");
  const std::vector<float> want = {0.1f, -0.2f, 0.3f, 1, 2, 3, -1.5f, 0, 2.25f, 4, 5, 6};
  EXPECT_EQ(wv.values, want);
  EXPECT_EQ(wv.duplicates, 0);
}

TEST_F(WordVectorsTest, MaxWordsStopsEarly) {
  const std::string p = write("glove.txt", "a 1 2\nb 3 4\nc 5 6\nd oops\n");
  const WordVectors wv = load_word_vectors(p, 2);
  EXPECT_EQ(wv.vocab.size(), 2);
  EXPECT_EQ(wv.values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(load_word_vectors(p, -1), Error);
}

TEST_F(WordVectorsTest, DuplicateKeepsFirstAndCounts) {
  const std::string p = write("glove.txt", "a 1 2\nb 3 4\na 9 9\n\na 8 8\n");
  const WordVectors wv = load_word_vectors(p);
  EXPECT_EQ(wv.vocab.size(), 2);
  EXPECT_EQ(wv.duplicates, 2);
  EXPECT_EQ(wv.values, (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(WordVectorsTest, Errors) {
  const std::string missing = (dir_ / "nope.txt").string();
  std::string msg = error_of([&] { load_word_vectors(missing); });
  EXPECT_CONTAINS(msg, missing);
  EXPECT_CONTAINS(msg, "cannot open");

  std::string p = write("empty.txt", "");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "empty");
  p = write("blank.txt", "\n\r\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "empty");

  p = write("bad.txt", "a 1 2\nb 3 x4\n");
  msg = error_of([&] { load_word_vectors(p); });
  EXPECT_CONTAINS(msg, p + ":2:");
  EXPECT_CONTAINS(msg, "'x4'");

  p = write("partial.txt", "a 1 2.5.1\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), p + ":1: value 2 of word 'a' is not a finite float: '2.5.1'");
  p = write("nan.txt", "a 1 nan\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "'nan'");
  p = write("big.txt", "a 1 1e39\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "'1e39'");

  p = write("tiny.txt", "a 1e-50 -1e-40\n");  // underflow is not an error
  EXPECT_EQ(load_word_vectors(p).values[0], 0.0f);

  p = write("ragged.txt", "a 1 2\nb 3 4\nc 5\n");
  msg = error_of([&] { load_word_vectors(p); });
  EXPECT_CONTAINS(msg, p + ":3:");
  EXPECT_CONTAINS(msg, "has 1 values, expected 2");

  p = write("w2v.txt", "2 3\na 1 2 3\nb 4 5 6\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "word2vec");

  p = write("novalues.txt", "lonely\n");
  EXPECT_CONTAINS(error_of([&] { load_word_vectors(p); }), "has no values");
}

TEST_F(WordVectorsTest, CopyIntoEmbedding) {
  const WordVectors wv = load_word_vectors(write("glove.txt", "cat 1 2\ndog 3 4\n<unk> 9 9\n"));
  Vocabulary vocab;
  vocab.set_unknown("<unk>");
  vocab.add("dog");
  vocab.add("zebra");
  vocab.add("cat");
  for (DType dt : {DType::f32, DType::f64}) {
    ParameterSet ps(dt, 0);
    Parameter& e = ps.add("embed", {4, 2}, Init::constant(-7));
    EXPECT_EQ(copy_word_vectors(wv, vocab, e), 3);
    // Rows: <unk>, dog, zebra (not found: untouched), cat.
    const std::vector<double> want = {9, 9, 3, 4, -7, -7, 1, 2};
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(e.value.at(i), want[static_cast<size_t>(i)]) << i;
  }
}

TEST_F(WordVectorsTest, CopyChecksShape) {
  const WordVectors wv = load_word_vectors(write("glove.txt", "cat 1 2\n"));
  Vocabulary vocab;
  vocab.add("cat");
  ParameterSet ps(DType::f32, 0);
  Parameter& wrong_dim = ps.add("e3", {1, 3}, Init::zeros());
  EXPECT_CONTAINS(error_of([&] { copy_word_vectors(wv, vocab, wrong_dim); }), "expected [1, 2]");
  Parameter& wrong_rows = ps.add("e2", {2, 2}, Init::zeros());
  EXPECT_CONTAINS(error_of([&] { copy_word_vectors(wv, vocab, wrong_rows); }), "'e2' has shape [2, 2]");
}

}  // namespace
}  // namespace sylva
