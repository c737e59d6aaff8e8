// The Penn Treebank language-modelling corpus (Mikolov's preprocessing,
// 10k vocabulary) as sentences of word ids, and as Sylva input graphs for
// the Var-LSTM (one chain per sentence) and Fixed-LSTM (the stream cut
// into fixed-length chains) language models.
#pragma once

#include <string>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::examples {

using Sentence = std::vector<int32_t>;

/// Reads one PTB file: one sentence per line, tokens separated by ASCII
/// whitespace (other bytes, e.g. UTF-8, stay inside tokens), "<eos>"
/// appended to every line, so an empty line is a sentence of just "<eos>"
/// (the files contain no "<eos>"; this is the usual stream tokenisation).
/// With `grow`, new tokens are added to `vocab`; otherwise they map to its
/// unknown id, and an unknown token when it has none is a sylva::Error
/// naming file:line and the token. A missing file is a sylva::Error.
std::vector<Sentence> read_ptb(const std::string& path, Vocabulary& vocab, bool grow);

struct PtbCorpus {
  /// Built from train in order of first use, "<eos>" first; valid and
  /// test words outside it map to "<unk>". 10,000 types on PTB.
  Vocabulary vocab;
  std::vector<Sentence> train, valid, test;  // every sentence ends with <eos>
  std::string source;                       // the directory
};

/// Reads ptb.train.txt, ptb.valid.txt and ptb.test.txt from `dir`.
PtbCorpus load_ptb(const std::string& dir);

/// The PTB directory: `flag`, else $SYLVA_DATA/ptb, else shared/data/ptb
/// (see find_dataset); "" if none.
std::string find_ptb(const std::string& flag, std::vector<std::string>& looked);

/// Number of tokens (words and <eos>) in `sentences`.
int64_t count_tokens(const std::vector<Sentence>& sentences);

/// Var-LSTM samples: sentence [w1 … wn <eos>] becomes a chain of n+1
/// vertices with ids "words" = [<eos> w1 … wn] (the inputs; <eos> starts a
/// sentence) and "labels" = [w1 … wn <eos>] (the next word), so every
/// token of the corpus is predicted once. `eos` is the <eos> id; ids
/// outside [0, vocab_size) are a sylva::Error naming source:line.
std::vector<InputGraph> sentence_chains(const std::vector<Sentence>& sentences, int32_t eos, int32_t vocab_size,
                                        const std::string& source);

/// Fixed-LSTM samples: the sentences joined into one stream s, cut into
/// chains of `length` vertices with "words" = s[i] and "labels" = s[i+1].
/// The last chain holds what is left (shorter, never empty), so every
/// token after the first is predicted exactly once.
std::vector<InputGraph> stream_chains(const std::vector<Sentence>& sentences, int32_t length, int32_t vocab_size,
                                      const std::string& source);

}  // namespace sylva::examples
