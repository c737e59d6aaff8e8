// Hostile nesting: a 100,000-deep JSON graph is refused with an error naming
// the file and line before a (recursive) parser sees it (CoSA's YAML:
// tests/sched/cosa_deep_nesting_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/nesting.h"
#include "support/test_util.h"
#include "sylva/core/file.h"
#include "sylva/sched/ios_graph.h"

namespace sylva {
namespace {

using test::nested;
using test::write_temp;

TEST(DeepNesting, CheckNestingCountsBracketsOutsideStringsAndComments) {
  EXPECT_EQ(test::error_of([] { check_nesting("[[{}]]", "t", 3); }), "<no error>");
  EXPECT_CONTAINS(test::error_of([] { check_nesting("a\n[[[[", "t.json", 3); }),
                  "[reader] t.json: line 2: brackets nest deeper than 3 levels");
  EXPECT_EQ(test::error_of([] { check_nesting("\"[[[[\\\"[[[\" [", "t", 1); }), "<no error>");
  EXPECT_EQ(test::error_of([] { check_nesting("a: 1 # [[[[\n[", "t", 1); }), "<no error>");
}

TEST(DeepNesting, A100kDeepJsonGraphIsAnError) {
  const std::string path = write_temp("sylva_deep.json", "{\"blocks\": " + nested('[', ']', 100000) + "}");
  EXPECT_CONTAINS(test::error_of([&] { ios::read_ios_graph(path); }), "brackets nest deeper than 512 levels");
}

}  // namespace
}  // namespace sylva
