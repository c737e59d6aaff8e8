// Hostile nesting in CoSA's YAML: 100,000-deep files are refused with an
// error naming the file and line before a (recursive) parser sees them;
// files nested as deep as real ones still parse (JSON and check_nesting:
// tests/sched/deep_nesting_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/nesting.h"
#include "support/test_util.h"
#include "sylva/core/file.h"
#include "sylva/sched/cosa_spec.h"

namespace sylva {
namespace {

using test::nested;
using test::write_temp;

TEST(DeepNesting, A100kDeepYamlProblemIsAnError) {
  const std::string path = write_temp("sylva_deep.yaml", "problem:" + nested('[', ']', 100000));
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(path); }), "brackets nest deeper than 512 levels");
  const std::string maps = write_temp("sylva_deep_maps.yaml", "problem: {a: {b: {c: [1, [2, [3]]]}}}\n");
  EXPECT_EQ(test::error_of([&] { check_nesting(read_file(maps), maps); }), "<no error>");
}

TEST(DeepNesting, ANonNameInAKeepListIsAnErrorNotAYamlException) {
  const std::string arch = write_temp("sylva_keep_arch.yaml",
                                 "arch:\n  arithmetic:\n    instances: 4\n  storage:\n  - name: Buf\n    entries: 64\n"
                                 "    instances: 1\n  - name: DRAM\n    technology: DRAM\n    instances: 1\n"
                                 "    bandwidth: 2\n");
  const std::string ms = write_temp("sylva_keep_ms.yaml", "mapspace:\n  constraints:\n  - target: Buf\n    type: datatype\n"
                                                     "    keep: [{x: 1}]\n");
  const cosa::Arch a = cosa::read_arch(arch);
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_mapspace(ms, a); }), "holds a non-name");
}

// Found by fuzz_cosa_yaml: a constraint that is a scalar where a map is
// expected made yaml-cpp throw from operator[] past the readers' checks.
TEST(DeepNesting, AScalarWhereAMapBelongsIsAnErrorNotAYamlException) {
  const std::string arch = write_temp("sylva_scalar_arch.yaml",
                                 "arch:\n  arithmetic:\n    instances: 4\n  storage:\n  - name: Buf\n    entries: 64\n"
                                 "    instances: 1\n  - name: DRAM\n    technology: DRAM\n    instances: 1\n"
                                 "    bandwidth: 2\n");
  const std::string ms = write_temp("sylva_scalar_ms.yaml", "mapspace:\n  constraints:\n  - just a scalar\n");
  const cosa::Arch a = cosa::read_arch(arch);
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_mapspace(ms, a); }), "sylva_scalar_ms.yaml");
}

// Block style nests without brackets: "- - - x" is three sequences deep.
// yaml-cpp's parser stops at a fixed depth (its DeepRecursion guard; 500 in
// Debian 12's 0.7.0);
// the readers turn that into an error naming the file.
TEST(DeepNesting, A100kDeepBlockYamlIsAnError) {
  std::string chain;
  for (int i = 0; i < 100000; ++i) chain += "- ";
  const std::string path = write_temp("sylva_deep_block.yaml", "problem:\n  " + chain + "x\n");
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(path); }),
                  "sylva_deep_block.yaml: line 2: YAML nests deeper than");
  // A mapping given the same way (one "? " complex key inside another).
  std::string keys;
  for (int i = 0; i < 100000; ++i) keys += "? ";
  const std::string kpath = write_temp("sylva_deep_keys.yaml", "problem:\n  " + keys + "x\n");
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(kpath); }),
                  "sylva_deep_keys.yaml: line 2: YAML nests deeper than");
}

// A "billion laughs" file: ten levels of anchors, each a list of ten aliases
// of the one before (10^10 strings if expanded). yaml-cpp shares an
// aliased node instead of copying it and the readers never walk a node
// they do not use, so reading costs what the file's length does: the
// expected answer is the error for what the file lacks, at once.
TEST(DeepNesting, AYamlAliasBombCostsOnlyItsLength) {
  std::string bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 10; ++i) {
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *l" : "*l") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::string path = write_temp("sylva_alias_bomb.yaml", bomb + "problem: *l10\n");
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(path); }),
                  "sylva_alias_bomb.yaml: 'problem' (line 11) is not a map");
  // The same bomb where the readers iterate: a mapping whose entries are aliases.
  const std::string arch = write_temp("sylva_alias_arch.yaml",
                                 "arch:\n  arithmetic:\n    instances: 4\n  storage:\n  - name: Buf\n    entries: 64\n"
                                 "    instances: 1\n  - name: DRAM\n    technology: DRAM\n    instances: 1\n"
                                 "    bandwidth: 2\n");
  const cosa::Arch a = cosa::read_arch(arch);
  const std::string mapping = bomb + "mapping: *l10\n";
  EXPECT_CONTAINS(test::error_of([&] { cosa::parse_mapping(mapping, a, "bomb.yaml"); }),
                  "bomb.yaml: missing 'target'");
}

// An anchor whose node holds an alias of itself is a cyclic node in
// yaml-cpp; nothing may follow it forever.
TEST(DeepNesting, ASelfReferencingYamlAliasIsAnError) {
  const std::string path = write_temp("sylva_alias_cycle.yaml", "problem: &p [*p, *p]\n");
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(path); }), "sylva_alias_cycle.yaml: 'problem'");
  const std::string map = write_temp("sylva_alias_cycle_map.yaml", "problem: &p {shape: *p, instance: *p}\n");
  EXPECT_CONTAINS(test::error_of([&] { cosa::read_problem(map); }), "sylva_alias_cycle_map.yaml: missing 'R'");
}

}  // namespace
}  // namespace sylva
