#include "sylva/train/vocabulary.h"

#include <gtest/gtest.h>

#include <string>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

TEST(Vocabulary, AddAssignsDenseIdsInOrder) {
  Vocabulary v;
  EXPECT_EQ(v.size(), 0);
  EXPECT_EQ(v.add("the"), 0);
  EXPECT_EQ(v.add("cat"), 1);
  EXPECT_EQ(v.add("the"), 0);
  EXPECT_EQ(v.size(), 2);
  EXPECT_EQ(v.id("cat"), 1);
  EXPECT_EQ(v.token(0), "the");
  EXPECT_EQ(v.token(1), "cat");
  EXPECT_TRUE(v.contains("the"));
  EXPECT_FALSE(v.contains("dog"));
}

TEST(Vocabulary, MissWithoutUnknownIsMinusOne) {
  Vocabulary v;
  v.add("a");
  EXPECT_EQ(v.unknown_id(), -1);
  EXPECT_EQ(v.id("b"), -1);
}

TEST(Vocabulary, UnknownReceivesMisses) {
  Vocabulary v;
  v.add("a");
  v.set_unknown("<unk>");
  EXPECT_EQ(v.unknown_id(), 1);
  EXPECT_EQ(v.id("zzz"), 1);
  EXPECT_EQ(v.id("a"), 0);
  EXPECT_FALSE(v.contains("zzz"));
  EXPECT_EQ(v.size(), 2);
}

TEST(Vocabulary, UnknownCanBeAnExistingToken) {
  Vocabulary v;
  v.add("<unk>");
  v.add("a");
  v.set_unknown("<unk>");
  EXPECT_EQ(v.unknown_id(), 0);
  EXPECT_EQ(v.size(), 2);
}

TEST(Vocabulary, Utf8TokensAreBytes) {
  Vocabulary v;
  const int32_t nbsp = v.add("8\xC2\xA0" "1\\/2");
  const int32_t space = v.add("8 1\\/2");
  EXPECT_NE(nbsp, space);
  EXPECT_EQ(v.token(nbsp), "8\xC2\xA0" "1\\/2");
  EXPECT_EQ(v.add(""), 2);  // the empty token is a token like any other
  EXPECT_TRUE(v.contains(""));
}

TEST(Vocabulary, TokenIdOutOfRange) {
  Vocabulary v;
  v.add("a");
  EXPECT_CONTAINS(error_of([&] { (void)v.token(1); }), "[vocabulary] token id 1 out of range [0, 1)");
  EXPECT_CONTAINS(error_of([&] { (void)v.token(-1); }), "[vocabulary] token id -1 out of range [0, 1)");
  Vocabulary empty;
  EXPECT_CONTAINS(error_of([&] { (void)empty.token(0); }), "out of range [0, 0)");
}

}  // namespace
}  // namespace sylva
