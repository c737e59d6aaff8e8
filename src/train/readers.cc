#include "sylva/train/readers.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "sylva/core/error.h"

namespace sylva {

namespace {

// Calls fn(line, line_number) for every line of the file (1-based, without
// the '\n'). A final line without '\n' is still a line.
void for_each_line(const std::string& path, const std::function<void(std::string_view, int)>& fn) {
  std::error_code ec;
  SYLVA_CHECK(!std::filesystem::is_directory(path, ec), "[reader] cannot read '", path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) SYLVA_THROW("[reader] cannot open '", path, "': ", std::strerror(errno));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    SYLVA_CHECK(number < std::numeric_limits<int>::max(), "[reader] ", path, ": too many lines");
    fn(line, ++number);
  }
  SYLVA_CHECK(!in.bad(), "[reader] ", path, ":", number + 1, ": read error: ", std::strerror(errno));
}

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Splits on ASCII whitespace only, so UTF-8 (including U+00A0) stays inside tokens.
struct Word {
  std::string_view text;
  int column;  // 1-based byte column
};
std::vector<Word> split_ascii_whitespace(std::string_view line) {
  std::vector<Word> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_ascii_space(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !is_ascii_space(line[i])) ++i;
    if (i > start) out.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

// Parses the whole token as an int32; rejects "3x", "", "+3" and overflow.
bool parse_int32(std::string_view s, int32_t& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// ---- bracketed trees -----------------------------------------------------

bool is_tree_separator(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// One open node: "(label ..." waiting for its ')'.
struct OpenNode {
  int column = 0;  // of its '('
  bool has_label = false;
  int32_t label = 0;
  std::vector<int32_t> children;  // vertex ids of closed subtrees
  bool has_word = false;
  std::string_view word;
};

class TreeParser {
 public:
  TreeParser(std::string_view text, const std::string& source, int line, int num_labels)
      : text_(text), source_(source), line_(line), num_labels_(num_labels) {}

  BracketedTree parse() {
    SYLVA_CHECK(num_labels_ > 0, "[reader] ", where(1), "num_labels must be > 0, got ", num_labels_);
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      const int col = static_cast<int>(i) + 1;
      if (is_tree_separator(c)) {
        ++i;
      } else if (c == '(') {
        open(col);
        ++i;
      } else if (c == ')') {
        close(col);
        ++i;
      } else {
        const size_t start = i;
        while (i < text_.size() && !is_tree_separator(text_[i]) && text_[i] != '(' && text_[i] != ')') ++i;
        word(text_.substr(start, i - start), col);
      }
    }
    if (!stack_.empty())
      SYLVA_THROW("[reader] ", where(stack_.back().column), "unbalanced bracket: '(' with no matching ')' (",
                  stack_.size(), " node(s) left open at end of line)");
    SYLVA_CHECK(done_, "[reader] ", where(1), "empty line (expected one bracketed tree such as \"(3 (2 a) (4 b))\")");

    BracketedTree tree;
    const std::string graph_source = source_ + ":" + std::to_string(line_);
    tree.graph = InputGraph::from_children(children_, graph_source);
    tree.graph.set_ids("labels", std::move(labels_));
    tree.tokens = std::move(tokens_);
    return tree;
  }

 private:
  std::string where(int col) const {
    return source_ + ":" + std::to_string(line_) + ":" + std::to_string(col) + ": ";
  }

  void open(int col) {
    if (done_) SYLVA_THROW("[reader] ", where(col), "trailing tokens after the tree: '(' after the root closed");
    if (!stack_.empty()) {
      OpenNode& top = stack_.back();
      if (!top.has_label)
        SYLVA_THROW("[reader] ", where(col), "missing label: '(' at column ", top.column,
                    " must be followed by an integer label, got '('");
      if (top.has_word)
        SYLVA_THROW("[reader] ", where(col), "node at column ", top.column, " mixes a word ('", top.word,
                    "') and subtrees; a node holds either one word or subtrees");
    }
    stack_.push_back(OpenNode{});
    stack_.back().column = col;
  }

  void close(int col) {
    if (stack_.empty()) {
      SYLVA_THROW("[reader] ", where(col), "unbalanced bracket: ')' with no matching '('",
                  done_ ? " after the root closed" : "");
    }
    OpenNode node = std::move(stack_.back());
    stack_.pop_back();
    if (!node.has_label) SYLVA_THROW("[reader] ", where(node.column), "empty node \"()\"");
    if (!node.has_word && node.children.empty())
      SYLVA_THROW("[reader] ", where(node.column), "node (", node.label,
                  ") has a label but no word or subtree");
    SYLVA_CHECK(children_.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), "[reader] ",
                where(col), "too many nodes");
    const auto id = static_cast<int32_t>(children_.size());
    children_.push_back(std::move(node.children));
    labels_.push_back(node.label);
    tokens_.emplace_back(node.has_word ? std::string(node.word) : std::string());
    if (stack_.empty()) {
      done_ = true;
    } else {
      stack_.back().children.push_back(id);
    }
  }

  void word(std::string_view w, int col) {
    if (done_) SYLVA_THROW("[reader] ", where(col), "trailing tokens after the tree: '", w, "'");
    if (stack_.empty())
      SYLVA_THROW("[reader] ", where(col), "expected '(' to start a tree, got '", w, "'");
    OpenNode& top = stack_.back();
    if (!top.has_label) {
      int32_t label = 0;
      if (!parse_int32(w, label))
        SYLVA_THROW("[reader] ", where(col), "label '", w, "' is not an integer");
      if (label < 0 || label >= num_labels_)
        SYLVA_THROW("[reader] ", where(col), "label ", label, " out of range [0, ", num_labels_, ")");
      top.has_label = true;
      top.label = label;
    } else if (!top.children.empty()) {
      SYLVA_THROW("[reader] ", where(col), "node at column ", top.column, " mixes subtrees and a word ('", w,
                  "'); a node holds either one word or subtrees");
    } else if (top.has_word) {
      SYLVA_THROW("[reader] ", where(col), "leaf at column ", top.column, " has two words ('", top.word, "' and '",
                  w, "'); a leaf is \"(label word)\"");
    } else {
      top.has_word = true;
      top.word = w;
    }
  }

  std::string_view text_;
  const std::string& source_;
  int line_;
  int num_labels_;
  std::vector<OpenNode> stack_;
  bool done_ = false;
  std::vector<std::vector<int32_t>> children_;
  std::vector<int32_t> labels_;
  std::vector<std::string> tokens_;
};

}  // namespace

BracketedTree parse_bracketed_tree(std::string_view text, const std::string& source, int line, int num_labels) {
  return TreeParser(text, source, line, num_labels).parse();
}

std::vector<BracketedTree> read_bracketed_trees(const std::string& path, int num_labels) {
  std::vector<BracketedTree> out;
  for_each_bracketed_tree(path, [&](BracketedTree&& t) { out.push_back(std::move(t)); }, num_labels);
  return out;
}

void for_each_bracketed_tree(const std::string& path, const std::function<void(BracketedTree&&)>& fn,
                             int num_labels) {
  for_each_line(path,
                [&](std::string_view line, int number) { fn(parse_bracketed_tree(line, path, number, num_labels)); });
}

std::vector<TokenChain> read_token_sequences(const std::string& path) {
  std::vector<TokenChain> out;
  for_each_line(path, [&](std::string_view line, int number) {
    const std::vector<Word> words = split_ascii_whitespace(line);
    SYLVA_CHECK(!words.empty(), "[reader] ", path, ":", number, ": empty line (expected whitespace-separated tokens)");
    SYLVA_CHECK(words.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), "[reader] ", path, ":",
                number, ": too many tokens");
    TokenChain chain;
    chain.graph = InputGraph::chain(static_cast<int32_t>(words.size()), path + ":" + std::to_string(number));
    chain.tokens.reserve(words.size());
    for (const Word& w : words) chain.tokens.emplace_back(w.text);
    out.push_back(std::move(chain));
  });
  return out;
}

std::vector<InputGraph> read_parent_arrays(const std::string& path) {
  std::vector<InputGraph> out;
  for_each_line(path, [&](std::string_view line, int number) {
    const std::vector<Word> words = split_ascii_whitespace(line);
    SYLVA_CHECK(!words.empty(), "[reader] ", path, ":", number,
                ": empty line (expected whitespace-separated parent indices, -1 for a root)");
    std::vector<int32_t> parents;
    parents.reserve(words.size());
    for (size_t i = 0; i < words.size(); ++i) {
      int32_t p = 0;
      SYLVA_CHECK(parse_int32(words[i].text, p), "[reader] ", path, ":", number, ":", words[i].column,
                  ": parent of vertex ", i, " is '", words[i].text, "', not an int32 (use -1 for a root)");
      parents.push_back(p);
    }
    out.push_back(InputGraph::from_parents(parents, path + ":" + std::to_string(number)));
  });
  return out;
}

}  // namespace sylva
