// IOS CNN graphs (JSON): read, or a sylva::Error naming what is wrong.
// Oracle: a graph that reads, written back (write_ios_graph, with its own
// stages), reads to the same graph, and writing that again gives the same bytes.

#include "fuzz_util.h"
#include "sylva/core/file.h"
#include "sylva/sched/ios_graph.h"

namespace {

using sylva::ios::CnnGraph;
using sylva::ios::CnnNode;

// Every field the reader fills, as text: two graphs are the same graph when
// their descriptions are equal.
std::string describe(const CnnNode& n) {
  std::string s = n.type + " " + n.name + " (";
  for (const auto& term : n.inputs) {
    s += "[";
    for (const auto& v : term) s += v.node + ":" + std::to_string(v.begin) + "-" + std::to_string(v.end) + " ";
    s += "]";
  }
  s += ") shape";
  for (int64_t d : n.output_shape) s += " " + std::to_string(d);
  s += " oc " + std::to_string(n.out_channels) + " g " + std::to_string(n.groups);
  for (const auto* a : {&n.kernel, &n.stride, &n.padding}) s += " " + std::to_string((*a)[0]) + "x" + std::to_string((*a)[1]);
  s += " act " + n.act + " pool " + n.pool_type + " op " + n.op + " {";
  for (const CnnNode& m : n.nodes) s += describe(m) + "; ";
  return s + "}";
}

std::string describe(const CnnGraph& g) {
  std::string s = g.name + "\n" + describe(g.input) + "\n";
  for (const auto& b : g.blocks) {
    s += "block " + describe(b.enter) + "\n";
    for (const CnnNode& n : b.inner) s += "  " + describe(n) + "\n";
    s += "  exit " + describe(b.exit) + "\n  stages";
    for (const auto& stage : b.stages) {
      s += " |";
      for (const auto& group : stage) {
        s += " (";
        for (const auto& op : group) s += op + " ";
        s += ")";
      }
    }
    s += "\n";
  }
  return s;
}

std::vector<std::vector<std::vector<std::vector<std::string>>>> stages_of(const CnnGraph& g) {
  std::vector<std::vector<std::vector<std::vector<std::string>>>> stages;
  for (const auto& b : g.blocks) stages.push_back(b.stages);
  return stages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".json");
  sylva::fuzz::only_sylva_errors([&] {
    const CnnGraph g = sylva::ios::read_ios_graph(path);
    const std::string a_path = path + ".a.json", b_path = path + ".b.json";
    sylva::ios::write_ios_graph(path, a_path, stages_of(g));
    const CnnGraph again = sylva::ios::read_ios_graph(a_path);
    if (describe(again) != describe(g)) sylva::fuzz::finding("read -> write -> read changed the graph");
    sylva::ios::write_ios_graph(a_path, b_path, stages_of(again));
    if (sylva::read_file(a_path) != sylva::read_file(b_path))
      sylva::fuzz::finding("write -> read -> write is not byte-identical");
  });
  return 0;
}
