// The IOS JSON graph format: reading (multi-term inputs, sequential
// nodes), errors, block parts, writing a schedule back, DOT.
#include "sylva/sched/ios_graph.h"

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>

#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/core/file.h"

namespace sylva::ios {
namespace {

namespace fs = std::filesystem;

TEST(IosGraph, ReadsNodesTermsAndSequentialNodes) {
  test::TempDir dir;
  const CnnGraph g = read_ios_graph(dir.file("tiny.json", test::kTinyCnnGraph));
  EXPECT_EQ(g.name, "tiny");
  ASSERT_EQ(g.blocks.size(), 1u);
  const CnnBlock& b = g.blocks[0];
  ASSERT_EQ(b.inner.size(), 4u);
  const CnnNode& c = b.inner[2];
  ASSERT_EQ(c.inputs.size(), 2u);  // two terms, concatenated
  ASSERT_EQ(c.inputs[1].size(), 2u);  // the second sums two values
  EXPECT_EQ(c.inputs[1][1].node, "1");
  EXPECT_EQ(c.inputs[1][1].begin, 2);
  const CnnNode& s = b.inner[3];
  ASSERT_EQ(s.nodes.size(), 2u);
  ASSERT_EQ(s.inputs.size(), 1u);  // what it reads from outside: c
  EXPECT_EQ(s.inputs[0][0].node, "c");
  EXPECT_DOUBLE_EQ(b.inner[1].macs(), 2.0 * 8 * 8 * 4 * 9);
  EXPECT_DOUBLE_EQ(s.macs(), 4.0 * 8 * 8 * 2);  // grouped 1x1 conv: 4/2 input channels per output
  EXPECT_EQ(b.stages.size(), 5u);
  EXPECT_EQ(b.ops().size(), 5u);
}

TEST(IosGraph, PartsFollowATopologicalOrderAndKeepTheirEdges) {
  test::TempDir dir;
  const CnnGraph g = read_ios_graph(dir.file("tiny.json", test::kTinyCnnGraph));
  const std::vector<BlockPart> whole = block_parts(g.blocks[0]);
  ASSERT_EQ(whole.size(), 1u);
  const OpDag& dag = whole[0].dag;  // a, b -> c -> s, and c, s -> e
  ASSERT_EQ(dag.size(), 5);
  EXPECT_EQ(dag.preds(2), 0b00011u);
  EXPECT_EQ(dag.preds(4), 0b01100u);
  const std::vector<BlockPart> parts = block_parts(g.blocks[0], 2);
  ASSERT_EQ(parts.size(), 3u);
  std::vector<int> seen;
  for (const BlockPart& p : parts) seen.insert(seen.end(), p.ops.begin(), p.ops.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(parts[1].dag.preds(1), 0b01u);  // c -> s inside the second part
  EXPECT_CONTAINS(test::error_of([&] { block_parts(g.blocks[0], 0); }), "1..64");
  // Given parts (as the IOS project ships for NasNet).
  const std::vector<BlockPart> given = block_parts(g.blocks[0], {{"a", "b"}, {"c", "s", "e"}});
  ASSERT_EQ(given.size(), 2u);
  EXPECT_EQ(given[1].ops, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(given[1].dag.preds(2), 0b011u);  // e reads c and s
  const auto error_of_parts = [&](std::vector<std::vector<std::string>> p) {
    return test::error_of([&] { block_parts(g.blocks[0], p); });
  };
  EXPECT_CONTAINS(error_of_parts({{"a", "b", "x"}, {"c", "s", "e"}}), "'x', which is not an operator");
  EXPECT_CONTAINS(error_of_parts({{"a", "b", "c"}, {"c", "s", "e"}}), "'c' is in parts 0 and 1");
  EXPECT_CONTAINS(error_of_parts({{"a", "b"}, {"c", "s"}}), "'e' is in no part");
  EXPECT_CONTAINS(error_of_parts({{"a", "c"}, {"b", "s", "e"}}), "'c' (part 0) reads 'b' of a later part (1)");
}

struct UnitCost : StageCostModel {
  double latency(const OpDag&, const Stage& st) override {
    double longest = 0;
    for (OpSet g : st.groups) longest = std::max(longest, static_cast<double>(std::popcount(g)));
    return longest;
  }
  bool mergeable(const OpDag&, OpSet) override { return false; }
};

TEST(IosGraph, WritesTheScheduleBackAndDrawsIt) {
  test::TempDir dir;
  const std::string in = dir.file("tiny.json", test::kTinyCnnGraph);
  const CnnGraph g = read_ios_graph(in);
  const BlockPart part = block_parts(g.blocks[0])[0];
  UnitCost cost;
  const StagePlan plan = schedule(part.dag, cost, {Variant::parallel});
  const auto names = stage_names(g.blocks[0], part, plan);
  EXPECT_EQ(names.front(), (std::vector<std::vector<std::string>>{{"a"}, {"b"}}));  // a and b concurrently
  const std::string out = (dir.path / "scheduled.json").string();
  write_ios_graph(in, out, {names});
  const CnnGraph back = read_ios_graph(out);
  EXPECT_EQ(back.blocks[0].stages, names);
  EXPECT_EQ(back.blocks[0].inner.size(), 4u);  // the rest unchanged
  EXPECT_CONTAINS(test::error_of([&] { write_ios_graph(in, out, {}); }), "0 schedules for 1 blocks");
  const std::string dot = plan_dot(part.dag, plan, {"a", "b", "c", "s", "e"});
  EXPECT_CONTAINS(dot, "cluster_s0_g1");
  EXPECT_CONTAINS(dot, "n2 -> n3;");
  StagePlan merged{{{Stage::Kind::merged, {0b11}}}, 0, 0, 0};
  EXPECT_CONTAINS(test::error_of([&] { stage_names(g.blocks[0], part, merged); }), "merged stage");
}

TEST(IosGraph, MalformedFilesAreErrorsNamingTheNode) {
  test::TempDir dir;
  const auto error_for = [&](const std::string& from, const std::string& to) {
    std::string text = test::kTinyCnnGraph;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return test::error_of([&] { read_ios_graph(dir.file("bad.json", text)); });
  };
  EXPECT_CONTAINS(error_for(R"("type": "identity", "name": "c")", R"("type": "warp", "name": "c")"),
                  "node \"c\": unknown node type 'warp'");
  EXPECT_CONTAINS(error_for(R"([["a", 0, 2]])", R"([["zz", 0, 2]])"), "node 'c' reads unknown node 'zz'");
  EXPECT_CONTAINS(error_for(R"("out_channels": 2, "kernel": [1, 1])", R"("kernel": [1, 1])"),
                  "node \"a\": missing \"out_channels\"");
  EXPECT_CONTAINS(error_for(R"(["b", 0, 2])", R"(["b", 2, 2])"), "empty or negative channel range");
  EXPECT_CONTAINS(error_for(R"("blocks": [)", R"("blocks": [[)"), "not valid JSON");
  EXPECT_CONTAINS(test::error_of([&] { read_ios_graph((dir.path / "missing.json").string()); }), "cannot open");
}

TEST(IosGraphData, InceptionV3BlocksScheduleFasterThanSequentially) {
  const std::string data = test::data_dir();
  const std::string path = data + "/ios/graphs/inception_v3.seq.json";
  if (data.empty() || !fs::exists(path)) GTEST_SKIP() << "no IOS graphs: set SYLVA_DATA";
  const CnnGraph g = read_ios_graph(path);
  EXPECT_EQ(g.blocks.size(), 13u);
  UnitCost cost;
  int faster = 0;
  for (const CnnBlock& b : g.blocks)
    for (const BlockPart& p : block_parts(b)) {
      const StagePlan plan = schedule(p.dag, cost, {Variant::both, 3, 8});
      EXPECT_TRUE(valid_plan(p.dag, plan));
      faster += plan.cost < schedule(p.dag, cost, {Variant::sequential}).cost;
    }
  EXPECT_GE(faster, 10);  // the Inception modules' branches run side by side
}

}  // namespace
}  // namespace sylva::ios
