#include "sylva/train/word_vectors.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>
#include <system_error>

#include "sylva/core/error.h"

namespace sylva {
namespace {

// Splits on ASCII space only (GloVe's separator); runs of spaces and a
// trailing space, which some exporters leave, yield no empty tokens.
void split_spaces(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j + 1;
  }
}

// from_chars is locale-independent (unlike strtof) and rounds correctly.
// A value too small for float becomes 0; one too large is an error.
bool parse_float(std::string_view tok, float& out) {
  const char* end = tok.data() + tok.size();
  auto [ptr, ec] = std::from_chars(tok.data(), end, out);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    double wide = 0;
    auto [wptr, wec] = std::from_chars(tok.data(), end, wide);
    if (wec != std::errc() || wptr != end || std::fabs(wide) >= 1.0) return false;
    out = 0.0f;
    return true;
  }
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

}  // namespace

WordVectors load_word_vectors(const std::string& path, int64_t max_words) {
  SYLVA_CHECK(max_words >= 0, "[word_vectors] max_words must be >= 0 (0 = no limit), got ", max_words);
  std::ifstream in(path, std::ios::binary);
  if (!in) SYLVA_THROW("[word_vectors] cannot open '", path, "': ", std::generic_category().message(errno));

  WordVectors wv;
  std::string line;
  std::vector<std::string_view> tokens;
  std::vector<float> row;
  int64_t line_no = 0;
  while ((max_words == 0 || wv.vocab.size() < max_words) && std::getline(in, line)) {
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    split_spaces(line, tokens);
    if (tokens.empty()) continue;  // blank line, e.g. an extra newline at the end of the file
    const int64_t values = static_cast<int64_t>(tokens.size()) - 1;
    if (wv.dim == 0) {
      SYLVA_CHECK(values > 0, "[word_vectors] ", path, ":", line_no, ": word '", tokens[0],
                  "' has no values; expected 'word v1 v2 ... vd'");
      wv.dim = values;
    } else if (values != wv.dim) {
      // A first line "count dim" is a word2vec/fastText header that GloVe files do not have.
      const bool header_hint = line_no == 2 && wv.vocab.size() == 1 && wv.dim == 1;
      SYLVA_THROW("[word_vectors] ", path, ":", line_no, ": word '", tokens[0], "' has ", values,
                  " values, expected ", wv.dim, " as on the first line",
                  header_hint ? " (the file may start with a word2vec 'count dim' header line; remove it)" : "");
    }
    row.resize(static_cast<size_t>(wv.dim));
    for (int64_t k = 0; k < wv.dim; ++k) {
      const std::string_view tok = tokens[static_cast<size_t>(k) + 1];
      SYLVA_CHECK(parse_float(tok, row[static_cast<size_t>(k)]), "[word_vectors] ", path, ":", line_no,
                  ": value ", k + 1, " of word '", tokens[0], "' is not a finite float: '", tok, "'");
    }
    if (wv.vocab.contains(tokens[0])) {
      ++wv.duplicates;
      continue;
    }
    wv.vocab.add(tokens[0]);
    wv.values.insert(wv.values.end(), row.begin(), row.end());
  }
  SYLVA_CHECK(!in.bad(), "[word_vectors] ", path, ": read error after line ", line_no, ": ",
              std::generic_category().message(errno));
  SYLVA_CHECK(wv.vocab.size() > 0, "[word_vectors] ", path, ": no word vectors found (the file is empty)");
  return wv;
}

int64_t copy_word_vectors(const WordVectors& wv, const Vocabulary& vocab, Parameter& embedding) {
  const Shape want{vocab.size(), wv.dim};
  SYLVA_CHECK(embedding.value.shape() == want, "[word_vectors] embedding '", embedding.name, "' has shape ",
              embedding.value.shape().str(), ", expected ", want.str(),
              " (vocabulary size x word vector dimension)");
  const size_t dim = static_cast<size_t>(wv.dim);
  int64_t found = 0;
  dispatch_floating(embedding.value.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* table = embedding.value.data<T>();
    for (int32_t id = 0; id < vocab.size(); ++id) {
      const std::string& word = vocab.token(id);
      if (!wv.vocab.contains(word)) continue;
      const float* src = wv.values.data() + static_cast<size_t>(wv.vocab.id(word)) * dim;
      T* dst = table + static_cast<size_t>(id) * dim;
      for (size_t k = 0; k < dim; ++k) dst[k] = static_cast<T>(src[k]);
      ++found;
    }
  });
  return found;
}

}  // namespace sylva
