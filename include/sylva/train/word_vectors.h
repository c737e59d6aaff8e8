// Pre-trained word vectors in GloVe's text format ("word v1 v2 ... vd" per
// line). Users bring their own files; Sylva ships none.
#pragma once

#include <string>
#include <vector>

#include "sylva/frontend/parameter_set.h"
#include "sylva/train/vocabulary.h"

namespace sylva {

struct WordVectors {
  Vocabulary vocab;
  int64_t dim = 0;
  std::vector<float> values;  // vocab.size() x dim, row-major
  /// Lines whose word had already appeared; the first vector is kept.
  int64_t duplicates = 0;
};

/// Loads a GloVe text file. Every line must have the same number of
/// values; malformed numbers, ragged lines and a missing file raise
/// sylva::Error with file and line. Tokens may contain any byte except
/// ASCII space (GloVe's own separator). `max_words` > 0 stops early.
WordVectors load_word_vectors(const std::string& path, int64_t max_words = 0);

/// Copies the vector of every word of `vocab` found in `wv` into the rows of
/// `embedding` (shape [vocab.size(), wv.dim]); returns how many were found.
/// Rows of words not found are left as they are.
int64_t copy_word_vectors(const WordVectors& wv, const Vocabulary& vocab, Parameter& embedding);

}  // namespace sylva
