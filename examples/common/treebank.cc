#include "treebank.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "datasets.h"

namespace sylva::examples {
namespace fs = std::filesystem;

namespace {

// The graphs of a treebank file with their word ids, read one tree at a time.
std::vector<InputGraph> read_graphs(const fs::path& file, Vocabulary& vocab, bool grow) {
  std::vector<InputGraph> out;
  for_each_bracketed_tree(file.string(), [&](BracketedTree&& t) {
    std::vector<int32_t> words(t.tokens.size(), -1);
    for (size_t v = 0; v < t.tokens.size(); ++v)
      if (!t.tokens[v].empty()) words[v] = grow ? vocab.add(t.tokens[v]) : vocab.id(t.tokens[v]);
    t.graph.set_ids("words", std::move(words));
    out.push_back(std::move(t.graph));
  });
  return out;
}

}  // namespace

Treebank load_sst(const std::string& dir) {
  Treebank tb;
  tb.source = dir;
  tb.vocab.set_unknown("<unk>");
  // An empty split would train on nothing or score 0 of 0 and still exit 0.
  const auto split = [&](const char* name, bool grow, const char* use) {
    const fs::path file = fs::path(dir) / name;
    std::vector<InputGraph> graphs = read_graphs(file, tb.vocab, grow);
    SYLVA_CHECK(!graphs.empty(), "[sst] ", file.string(), " holds no trees: nothing to ", use);
    return graphs;
  };
  tb.train = split("train.txt", true, "train on");
  tb.dev = split("dev.txt", false, "choose the model on");
  tb.test = split("test.txt", false, "test on");
  return tb;
}

std::string find_sst(const std::string& flag, std::vector<std::string>& looked) {
  return find_dataset("sst", {"train.txt", "dev.txt", "test.txt"}, flag, looked);
}

namespace {

struct Lexicon {
  std::vector<std::string> positive{"good", "great", "fine", "lovely", "fun", "smart", "warm", "moving"};
  std::vector<std::string> negative{"bad", "awful", "dull", "boring", "weak", "silly", "cold", "messy"};
  std::vector<std::string> neutral{"the", "a", "movie", "film", "story", "plot", "cast", "and", "it", "is",
                                   "this", "with", "of", "script", "ending", "scenes"};
  std::vector<std::string> negators{"not", "never"};
  std::vector<std::string> intensifiers{"very", "really"};
};

struct Builder {
  std::mt19937_64& rng;
  const Lexicon& lex;
  Vocabulary& vocab;
  std::vector<std::vector<int32_t>> children;
  std::vector<int32_t> words, labels;
  std::vector<int> values;

  static int32_t label_of(int v) { return static_cast<int32_t>(std::clamp(v, -2, 2) + 2); }

  // Returns (vertex, value, kind) where kind: 0 plain, 1 negator, 2 intensifier.
  std::tuple<int32_t, int, int> leaf() {
    std::uniform_real_distribution<double> u(0, 1);
    double r = u(rng);
    const std::vector<std::string>* list;
    int value = 0, kind = 0;
    if (r < 0.45) list = &lex.neutral;
    else if (r < 0.62) list = &lex.positive, value = 1;
    else if (r < 0.79) list = &lex.negative, value = -1;
    else if (r < 0.90) list = &lex.negators, kind = 1;
    else list = &lex.intensifiers, kind = 2;
    const std::string& w = (*list)[rng() % list->size()];
    children.emplace_back();
    words.push_back(vocab.add(w));
    labels.push_back(label_of(value));
    return {static_cast<int32_t>(children.size() - 1), value, kind};
  }

  std::tuple<int32_t, int, int> tree(int n) {
    if (n == 1) return leaf();
    int left = 1 + static_cast<int>(rng() % static_cast<uint64_t>(n - 1));
    auto [l, lv, lk] = tree(left);
    auto [r, rv, rk] = tree(n - left);
    int value = lk == 1 ? -rv : lk == 2 ? 2 * rv : lv + rv;
    (void)rk;
    children.push_back({l, r});
    words.push_back(-1);
    labels.push_back(label_of(value));
    return {static_cast<int32_t>(children.size() - 1), value, 0};
  }
};

std::vector<InputGraph> make_split(std::mt19937_64& rng, const Lexicon& lex, Vocabulary& vocab, int count,
                                   const std::string& name) {
  std::vector<InputGraph> out;
  for (int s = 0; s < count; ++s) {
    Builder b{rng, lex, vocab, {}, {}, {}, {}};
    b.tree(3 + static_cast<int>(rng() % 18));
    InputGraph g = InputGraph::from_children(b.children, name + ":" + std::to_string(s + 1));
    g.set_ids("words", std::move(b.words));
    g.set_ids("labels", std::move(b.labels));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

Treebank synthetic_treebank(uint64_t seed, int train, int dev, int test) {
  Treebank tb;
  tb.source = "synthetic (seed " + std::to_string(seed) + ")";
  tb.vocab.set_unknown("<unk>");
  std::mt19937_64 rng(seed);
  Lexicon lex;
  tb.train = make_split(rng, lex, tb.vocab, train, "synthetic-train");
  tb.dev = make_split(rng, lex, tb.vocab, dev, "synthetic-dev");
  tb.test = make_split(rng, lex, tb.vocab, test, "synthetic-test");
  return tb;
}

}  // namespace sylva::examples
