#include "sylva/sched/ios_graph.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "sylva/core/error.h"
#include "sylva/core/file.h"

namespace sylva::ios {
namespace {

using nlohmann::json;

// Where we are in the file, for messages.
struct At {
  const std::string& file;
  std::string where;
  template <class... A>
  [[noreturn]] void fail(const A&... a) const {
    SYLVA_THROW("[ios_graph] ", file, ": ", where, ": ", a...);
  }
  const json& get(const json& j, const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) fail("missing \"", key, "\"");
    return *it;
  }
  int64_t integer(const json& j, const char* key) const {
    const json& v = get(j, key);
    if (!v.is_number_integer()) fail("\"", key, "\" must be an integer, got ", v.dump());
    return v.get<int64_t>();
  }
  std::string string(const json& j, const char* key) const {
    const json& v = get(j, key);
    if (!v.is_string()) fail("\"", key, "\" must be a string, got ", v.dump());
    return v.get<std::string>();
  }
  template <size_t N>
  std::array<int64_t, N> ints(const json& j, const char* key) const {
    const json& v = get(j, key);
    if (!v.is_array() || v.size() != N) fail("\"", key, "\" must be ", N, " integers, got ", v.dump());
    std::array<int64_t, N> out{};
    for (size_t k = 0; k < N; ++k) {
      if (!v[k].is_number_integer()) fail("\"", key, "\" must be ", N, " integers, got ", v.dump());
      out[k] = v[k].get<int64_t>();
    }
    return out;
  }
};

CnnNode parse_node(const json& j, const At& parent) {
  if (!j.is_object()) parent.fail("a node must be a JSON object, got ", j.dump().substr(0, 80));
  CnnNode n;
  At at{parent.file, parent.where + ", node " + (j.contains("name") ? j["name"].dump() : std::string("?"))};
  n.type = at.string(j, "type");
  n.name = at.string(j, "name");
  n.output_shape = at.ints<3>(j, "output_shape");
  if (n.type != "placeholder" && n.type != "sequential") {
    const json& ins = at.get(j, "inputs");
    if (!ins.is_array()) at.fail("\"inputs\" must be a list of terms");
    for (const json& term : ins) {
      if (!term.is_array() || term.empty()) at.fail("an input term must be a non-empty list of values");
      Term t;
      for (const json& v : term) {
        if (!v.is_array() || v.size() != 3 || !v[0].is_string() || !v[1].is_number_integer() ||
            !v[2].is_number_integer())
          at.fail("an input value must be [node name, channel begin, channel end], got ", v.dump());
        t.push_back({v[0].get<std::string>(), v[1].get<int64_t>(), v[2].get<int64_t>()});
        if (t.back().begin < 0 || t.back().end <= t.back().begin)
          at.fail("input value ", v.dump(), " has an empty or negative channel range");
      }
      n.inputs.push_back(std::move(t));
    }
  }
  if (n.type == "conv") {
    n.out_channels = at.integer(j, "out_channels");
    n.groups = at.integer(j, "groups");
    n.kernel = at.ints<2>(j, "kernel");
    n.stride = at.ints<2>(j, "stride");
    n.padding = at.ints<2>(j, "padding");
    n.act = at.string(j, "act");
    if (n.groups <= 0 || n.out_channels <= 0 || n.out_channels % n.groups != 0)
      at.fail("conv needs out_channels > 0 divisible by groups > 0 (got ", n.out_channels, ", ", n.groups, ")");
  } else if (n.type == "pool") {
    n.pool_type = at.string(j, "pool_type");
    n.kernel = at.ints<2>(j, "kernel");
    n.stride = at.ints<2>(j, "stride");
    n.padding = at.ints<2>(j, "padding");
  } else if (n.type == "element") {
    n.op = at.string(j, "op");
  } else if (n.type == "activation") {
    // The exported graphs hold none; the IOS project names the function "act_type" (older exports "act").
    n.op = at.string(j, j.contains("act_type") ? "act_type" : "act");
  } else if (n.type == "sequential") {
    const json& nodes = at.get(j, "nodes");
    if (!nodes.is_array() || nodes.empty()) at.fail("\"nodes\" of a sequential node must be a non-empty list");
    for (const json& m : nodes) n.nodes.push_back(parse_node(m, at));
    // Its inputs are what its nodes read from outside it.
    for (size_t k = 0; k < n.nodes.size(); ++k)
      for (const Term& t : n.nodes[k].inputs) {
        Term outside;
        for (const ValueRef& v : t)
          if (std::none_of(n.nodes.begin(), n.nodes.begin() + static_cast<std::ptrdiff_t>(k),
                           [&](const CnnNode& m) { return m.name == v.node; }))
            outside.push_back(v);
        if (!outside.empty()) n.inputs.push_back(std::move(outside));
      }
  } else if (n.type != "placeholder" && n.type != "identity" && n.type != "relu") {
    at.fail("unknown node type '", n.type, "'");
  }
  return n;
}

}  // namespace

double CnnNode::macs() const {
  if (type == "conv") {
    const double in_per_group = static_cast<double>(inputs.empty() ? 0 : [&] {
      int64_t c = 0;
      for (const Term& t : inputs) c += t.front().end - t.front().begin;
      return c;
    }()) / static_cast<double>(groups);
    return static_cast<double>(output_shape[0] * output_shape[1] * output_shape[2]) * in_per_group *
           static_cast<double>(kernel[0] * kernel[1]);
  }
  double m = 0;
  for (const CnnNode& n : nodes) m += n.macs();
  return m;
}

std::optional<MergedConv> merge_convs(const std::vector<const CnnNode*>& convs, std::string* why) {
  const auto refuse = [&](auto&&... msg) -> std::optional<MergedConv> {
    if (why) *why = detail::concat(msg...);
    return std::nullopt;
  };
  if (convs.size() < 2) return refuse("a merge needs two or more convolutions");
  const CnnNode& a = *convs[0];
  std::array<int64_t, 2> kmax{}, pad{-1, -1};
  for (const CnnNode* n : convs) {
    if (n->type != "conv" || n->groups != 1) return refuse("'", n->name, "' is not a convolution of groups 1");
    if (n->stride != a.stride || n->act != a.act || n->output_shape[1] != a.output_shape[1] ||
        n->output_shape[2] != a.output_shape[2])
      return refuse("'", n->name, "' and '", a.name, "' differ in stride, activation or output size");
    const auto same = [](const ValueRef& x, const ValueRef& y) {
      return x.node == y.node && x.begin == y.begin && x.end == y.end;
    };
    const auto same_term = [&](const Term& x, const Term& y) {
      return std::equal(x.begin(), x.end(), y.begin(), y.end(), same);
    };
    if (!std::equal(n->inputs.begin(), n->inputs.end(), a.inputs.begin(), a.inputs.end(), same_term))
      return refuse("'", n->name, "' and '", a.name, "' read different inputs");
    for (int d = 0; d < 2; ++d) kmax[d] = std::max(kmax[d], n->kernel[d]);
  }
  MergedConv m;
  m.conv = a;
  m.conv.name.clear();
  m.conv.out_channels = 0;
  for (const CnnNode* n : convs) {
    for (int d = 0; d < 2; ++d) {
      if ((kmax[d] - n->kernel[d]) % 2 != 0)
        return refuse("'", n->name, "' has kernel ", n->kernel[d], " in dimension ", d, ", which cannot be centred in ",
                      kmax[d]);
      const int64_t p = n->padding[d] + (kmax[d] - n->kernel[d]) / 2;
      if (pad[d] >= 0 && p != pad[d])
        return refuse("'", n->name, "''s padding does not line up with the others' once its kernel is centred");
      pad[d] = p;
    }
    m.offsets.push_back(m.conv.out_channels);
    m.conv.out_channels += n->out_channels;
    m.conv.name += (m.conv.name.empty() ? "" : "+") + n->name;
  }
  m.conv.kernel = kmax;
  m.conv.padding = pad;
  m.conv.output_shape[0] = m.conv.out_channels;
  return m;
}

std::vector<const CnnNode*> CnnBlock::ops() const {
  std::vector<const CnnNode*> out;
  for (const CnnNode& n : inner) out.push_back(&n);
  out.push_back(&exit);
  return out;
}

CnnGraph read_ios_graph(const std::string& path) {
  const std::string text = read_file(path);
  check_nesting(text, path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    SYLVA_THROW("[ios_graph] ", path, ": not valid JSON: ", e.what());
  }
  At top{path, "graph"};
  if (!j.is_object()) top.fail("the top level must be an object");
  CnnGraph g;
  g.source = path;
  g.name = top.string(j, "name");
  g.input = parse_node(top.get(j, "input"), top);
  const json& blocks = top.get(j, "blocks");
  if (!blocks.is_array()) top.fail("\"blocks\" must be a list");
  std::map<std::string, std::string> defined{{g.input.name, "the input"}};  // name -> where
  for (size_t b = 0; b < blocks.size(); ++b) {
    At at{path, "block " + std::to_string(b)};
    CnnBlock blk;
    blk.enter = parse_node(at.get(blocks[b], "enter_node"), at);
    const json& inner = at.get(blocks[b], "inner_nodes");
    if (!inner.is_array()) at.fail("\"inner_nodes\" must be a list");
    for (const json& n : inner) blk.inner.push_back(parse_node(n, at));
    blk.exit = parse_node(at.get(blocks[b], "exit_node"), at);
    // Every input refers to a node defined before it (the enter node is
    // the previous block's exit, or the graph input).
    if (!defined.count(blk.enter.name)) {
      for (const Term& t : blk.enter.inputs)
        for (const ValueRef& v : t)
          if (!defined.count(v.node)) at.fail("enter node '", blk.enter.name, "' reads unknown node '", v.node, "'");
      defined.emplace(blk.enter.name, at.where);
    }
    for (const CnnNode* n : blk.ops()) {
      for (const Term& t : n->inputs)
        for (const ValueRef& v : t)
          if (!defined.count(v.node)) at.fail("node '", n->name, "' reads unknown node '", v.node, "'");
      if (!defined.emplace(n->name, at.where).second && n != &blk.exit)
        at.fail("node name '", n->name, "' is defined twice");
    }
    if (blocks[b].contains("stages")) {
      const json& st = blocks[b]["stages"];
      try {
        blk.stages = st.get<std::vector<std::vector<std::vector<std::string>>>>();
      } catch (const json::exception&) {
        at.fail("\"stages\" must be a list of stages, each a list of groups of op names");
      }
    }
    g.blocks.push_back(std::move(blk));
  }
  return g;
}

namespace {

// Each operator's predecessors inside the block (indices into ops()).
std::vector<std::vector<int>> block_preds(const std::vector<const CnnNode*>& ops) {
  std::map<std::string, int> index;
  for (size_t k = 0; k < ops.size(); ++k) index[ops[k]->name] = static_cast<int>(k);
  std::vector<std::vector<int>> preds(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    for (const Term& t : ops[k]->inputs)
      for (const ValueRef& v : t)
        if (auto it = index.find(v.node); it != index.end() && it->second != static_cast<int>(k))
          preds[k].push_back(it->second);
  return preds;
}

BlockPart make_part(std::vector<int> members, const std::vector<std::vector<int>>& preds) {
  std::map<int, int> local;
  for (size_t k = 0; k < members.size(); ++k) local[members[k]] = static_cast<int>(k);
  std::vector<std::pair<int, int>> edges;
  for (size_t k = 0; k < members.size(); ++k)
    for (int p : preds[static_cast<size_t>(members[k])])
      if (auto it = local.find(p); it != local.end()) edges.push_back({it->second, static_cast<int>(k)});
  const int n = static_cast<int>(members.size());
  return {std::move(members), OpDag(n, edges)};
}

}  // namespace

std::vector<BlockPart> block_parts(const CnnBlock& block, int max_ops) {
  SYLVA_CHECK(max_ops >= 1 && max_ops <= 64, "[ios_graph] parts hold 1..64 operators, got ", max_ops);
  const std::vector<const CnnNode*> ops = block.ops();
  const std::vector<std::vector<int>> preds = block_preds(ops);
  std::vector<int> order, state(ops.size(), 0);  // a topological order, by depth-first search
  const std::function<void(int)> visit = [&](int v) {
    SYLVA_CHECK(state[static_cast<size_t>(v)] != 1, "[ios_graph] block has a cycle through '", ops[v]->name, "'");
    if (state[static_cast<size_t>(v)] == 2) return;
    state[static_cast<size_t>(v)] = 1;
    for (int p : preds[static_cast<size_t>(v)]) visit(p);
    state[static_cast<size_t>(v)] = 2;
    order.push_back(v);
  };
  for (size_t k = 0; k < ops.size(); ++k) visit(static_cast<int>(k));
  std::vector<BlockPart> parts;
  for (size_t first = 0; first < order.size(); first += static_cast<size_t>(max_ops))
    parts.push_back(make_part({order.begin() + static_cast<std::ptrdiff_t>(first),
                               order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + max_ops))},
                              preds));
  return parts;
}

std::vector<BlockPart> block_parts(const CnnBlock& block, const std::vector<std::vector<std::string>>& names) {
  const std::vector<const CnnNode*> ops = block.ops();
  const std::vector<std::vector<int>> preds = block_preds(ops);
  std::map<std::string, int> index;
  for (size_t k = 0; k < ops.size(); ++k) index[ops[k]->name] = static_cast<int>(k);
  std::vector<int> part_of(ops.size(), -1);
  for (size_t p = 0; p < names.size(); ++p)
    for (const std::string& n : names[p]) {
      auto it = index.find(n);
      SYLVA_CHECK(it != index.end(), "[ios_graph] part ", p, " names '", n, "', which is not an operator of the block");
      SYLVA_CHECK(part_of[static_cast<size_t>(it->second)] < 0, "[ios_graph] operator '", n, "' is in parts ",
                  part_of[static_cast<size_t>(it->second)], " and ", p);
      part_of[static_cast<size_t>(it->second)] = static_cast<int>(p);
    }
  for (size_t k = 0; k < ops.size(); ++k) {
    SYLVA_CHECK(part_of[k] >= 0, "[ios_graph] operator '", ops[k]->name, "' is in no part");
    for (int p : preds[k])
      SYLVA_CHECK(part_of[static_cast<size_t>(p)] <= part_of[k], "[ios_graph] operator '", ops[k]->name,
                  "' (part ", part_of[k], ") reads '", ops[static_cast<size_t>(p)]->name, "' of a later part (",
                  part_of[static_cast<size_t>(p)], ")");
  }
  std::vector<BlockPart> parts;
  for (size_t p = 0; p < names.size(); ++p) {
    std::vector<int> members;
    for (size_t k = 0; k < ops.size(); ++k)
      if (part_of[k] == static_cast<int>(p)) members.push_back(static_cast<int>(k));
    SYLVA_CHECK(members.size() <= 64, "[ios_graph] part ", p, " has ", members.size(), " operators (at most 64)");
    parts.push_back(make_part(std::move(members), preds));
  }
  return parts;
}

std::vector<std::vector<std::string>> read_parts(const std::string& path) {
  try {
    const std::string text = read_file(path);
    check_nesting(text, path);
    return nlohmann::json::parse(text).get<std::vector<std::vector<std::string>>>();
  } catch (const nlohmann::json::exception& e) {
    SYLVA_THROW("[ios_graph] ", path, ": a parts file is a JSON list of lists of op names (", e.what(), ")");
  }
}

std::vector<std::vector<std::vector<std::string>>> stage_names(const CnnBlock& block, const BlockPart& part,
                                                                const StagePlan& plan) {
  const std::vector<const CnnNode*> ops = block.ops();
  std::vector<std::vector<std::vector<std::string>>> out;
  for (const Stage& st : plan.stages) {
    SYLVA_CHECK(st.kind == Stage::Kind::concurrent, "[ios_graph] a merged stage rewrites the graph's operators; "
                "writing merged stages to the JSON format is not supported");
    std::vector<std::vector<std::string>> groups;
    for (OpSet g : st.groups) {
      std::vector<std::string> names;
      for (int v : part.dag.topo_order())  // a group runs in topological order
        if (g >> v & 1) names.push_back(ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]->name);
      groups.push_back(std::move(names));
    }
    out.push_back(std::move(groups));
  }
  return out;
}

void write_ios_graph(const std::string& source, const std::string& out,
                     const std::vector<std::vector<std::vector<std::vector<std::string>>>>& stages) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(read_file(source));
  auto& blocks = j.at("blocks");
  SYLVA_CHECK(blocks.size() == stages.size(), "[ios_graph] ", stages.size(), " schedules for ", blocks.size(),
              " blocks of ", source);
  for (size_t b = 0; b < blocks.size(); ++b) blocks[b]["stages"] = stages[b];
  write_file_atomically(out, j.dump() + "\n");
}

std::string plan_dot(const OpDag& dag, const StagePlan& plan, const std::vector<std::string>& names) {
  SYLVA_CHECK(static_cast<int>(names.size()) == dag.size(), "[ios_graph] ", names.size(), " names for ",
              dag.size(), " operators");
  std::string s = "digraph plan {\n  rankdir=TB;\n  node [shape=box];\n";
  for (size_t k = 0; k < plan.stages.size(); ++k) {
    const Stage& st = plan.stages[k];
    s += "  subgraph cluster_s" + std::to_string(k) + " {\n    label=\"stage " + std::to_string(k) +
         (st.kind == Stage::Kind::merged ? " (merged)" : "") + "\";\n";
    for (size_t g = 0; g < st.groups.size(); ++g) {
      s += "    subgraph cluster_s" + std::to_string(k) + "_g" + std::to_string(g) + " { label=\"group " +
           std::to_string(g) + "\";";
      for (int v = 0; v < dag.size(); ++v)
        if (st.groups[g] >> v & 1) s += " n" + std::to_string(v) + " [label=\"" + names[static_cast<size_t>(v)] + "\"];";
      s += " }\n";
    }
    s += "  }\n";
  }
  for (int v = 0; v < dag.size(); ++v)
    for (int u = 0; u < dag.size(); ++u)
      if (dag.succs(v) >> u & 1) s += "  n" + std::to_string(v) + " -> n" + std::to_string(u) + ";\n";
  return s + "}\n";
}

}  // namespace sylva::ios
