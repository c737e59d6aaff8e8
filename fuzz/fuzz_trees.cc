// PTB-bracketed trees (SST): every line parses or is a sylva::Error; a tree
// that parses prints back to text that parses to the same tree.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "sylva/train/readers.h"

namespace {

// "(label token)" for leaves, "(label child child ...)" inside; iterative
// (a fuzzed tree can be as deep as the input is long).
std::string to_text(const sylva::BracketedTree& t) {
  const sylva::InputGraph& g = t.graph;
  const std::vector<int32_t>& labels = g.ids("labels");
  std::string out;
  std::vector<std::pair<int32_t, size_t>> stack{{g.num_vertices() - 1, 0}};
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    const auto kids = g.children(v);
    if (next == 0) {
      out += "(" + std::to_string(labels[static_cast<size_t>(v)]) + " ";
      if (kids.empty()) out += t.tokens[static_cast<size_t>(v)];
    }
    if (next < kids.size()) {
      const int32_t c = kids[next++];
      stack.emplace_back(c, 0);
      continue;
    }
    out += ")";
    stack.pop_back();
  }
  return out;
}

bool same(const sylva::BracketedTree& a, const sylva::BracketedTree& b) {
  if (a.graph.num_vertices() != b.graph.num_vertices() || a.tokens != b.tokens) return false;
  if (a.graph.ids("labels") != b.graph.ids("labels")) return false;
  for (int32_t v = 0; v < a.graph.num_vertices(); ++v) {
    const auto x = a.graph.children(v), y = b.graph.children(v);
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t begin = 0;
  int line = 1;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    if (end == text.size() && begin == end && begin > 0) break;  // after the last newline
    const std::string_view one = text.substr(begin, end - begin);
    sylva::fuzz::only_sylva_errors([&] {
      const sylva::BracketedTree t = sylva::parse_bracketed_tree(one, "fuzz", line, 5);
      const std::string again = to_text(t);
      sylva::BracketedTree back;
      try {
        back = sylva::parse_bracketed_tree(again, "round trip", 1, 5);
      } catch (const sylva::Error& e) {
        sylva::fuzz::finding("a parsed tree printed as '" + again + "' does not parse: " + e.what());
      }
      if (!same(t, back)) sylva::fuzz::finding("round trip changed the tree: " + again);
    });
    begin = end + 1;
    ++line;
  }
  return 0;
}
