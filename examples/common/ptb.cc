#include "ptb.h"

#include <filesystem>
#include <fstream>

#include "datasets.h"

namespace sylva::examples {
namespace fs = std::filesystem;

namespace {

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

void check_ids(const InputGraph& g, int32_t vocab_size) {
  for (const char* name : {"words", "labels"}) {
    const std::vector<int32_t>& ids = g.ids(name);
    for (size_t v = 0; v < ids.size(); ++v)
      SYLVA_CHECK(ids[v] >= 0 && ids[v] < vocab_size, g.source(), ": ", name, " id ", ids[v], " at vertex ", v,
                  " is out of range [0, ", vocab_size, ")");
  }
}

}  // namespace

std::vector<Sentence> read_ptb(const std::string& path, Vocabulary& vocab, bool grow) {
  std::ifstream in(path, std::ios::binary);
  SYLVA_CHECK(in, "cannot open PTB file '", path, "'");
  const int32_t eos = grow ? vocab.add("<eos>") : vocab.id("<eos>");
  SYLVA_CHECK(eos >= 0 && vocab.token(eos) == "<eos>", path, ": the vocabulary has no <eos>");
  std::vector<Sentence> out;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    Sentence s;
    for (size_t i = 0; i < line.size();) {
      if (ascii_space(line[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && !ascii_space(line[j])) ++j;
      std::string_view token(line.data() + i, j - i);
      int32_t id = grow ? vocab.add(token) : vocab.id(token);
      SYLVA_CHECK(id >= 0, path, ":", line_no, ": unknown word '", token, "' and the vocabulary has no <unk>");
      s.push_back(id);
      i = j;
    }
    s.push_back(eos);
    out.push_back(std::move(s));
  }
  SYLVA_CHECK(!in.bad(), path, ": read error");
  return out;
}

PtbCorpus load_ptb(const std::string& dir) {
  PtbCorpus c;
  c.source = dir;
  // An empty split would train on nothing or divide by no tokens.
  const auto split = [&](const char* name, bool grow) {
    const std::string file = (fs::path(dir) / name).string();
    std::vector<Sentence> sentences = read_ptb(file, c.vocab, grow);
    SYLVA_CHECK(!sentences.empty(), "[ptb] ", file, " holds no sentences");
    return sentences;
  };
  c.train = split("ptb.train.txt", true);
  c.vocab.set_unknown("<unk>");
  c.valid = split("ptb.valid.txt", false);
  c.test = split("ptb.test.txt", false);
  return c;
}

std::string find_ptb(const std::string& flag, std::vector<std::string>& looked) {
  return find_dataset("ptb", {"ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"}, flag, looked);
}

int64_t count_tokens(const std::vector<Sentence>& sentences) {
  int64_t n = 0;
  for (const Sentence& s : sentences) n += static_cast<int64_t>(s.size());
  return n;
}

std::vector<InputGraph> sentence_chains(const std::vector<Sentence>& sentences, int32_t eos, int32_t vocab_size,
                                        const std::string& source) {
  std::vector<InputGraph> out;
  out.reserve(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    const Sentence& s = sentences[i];
    const std::string where = source + ":" + std::to_string(i + 1);
    SYLVA_CHECK(!s.empty(), where, ": empty sentence (every sentence ends with <eos>)");
    InputGraph g = InputGraph::chain(static_cast<int32_t>(s.size()), where);
    std::vector<int32_t> words(s.size());
    words[0] = eos;
    std::copy(s.begin(), s.end() - 1, words.begin() + 1);
    g.set_ids("words", std::move(words));
    g.set_ids("labels", s);
    check_ids(g, vocab_size);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<InputGraph> stream_chains(const std::vector<Sentence>& sentences, int32_t length, int32_t vocab_size,
                                      const std::string& source) {
  SYLVA_CHECK(length >= 1, "stream_chains: chain length must be >= 1, got ", length);
  std::vector<int32_t> stream;
  stream.reserve(static_cast<size_t>(count_tokens(sentences)));
  for (const Sentence& s : sentences) stream.insert(stream.end(), s.begin(), s.end());
  std::vector<InputGraph> out;
  for (size_t begin = 0; begin + 1 < stream.size(); begin += static_cast<size_t>(length)) {
    size_t n = std::min(static_cast<size_t>(length), stream.size() - 1 - begin);
    InputGraph g = InputGraph::chain(static_cast<int32_t>(n), source + " chunk " + std::to_string(out.size()));
    g.set_ids("words", std::vector<int32_t>(stream.begin() + static_cast<ptrdiff_t>(begin),
                                            stream.begin() + static_cast<ptrdiff_t>(begin + n)));
    g.set_ids("labels", std::vector<int32_t>(stream.begin() + static_cast<ptrdiff_t>(begin + 1),
                                             stream.begin() + static_cast<ptrdiff_t>(begin + n + 1)));
    check_ids(g, vocab_size);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace sylva::examples
