// The Var-LSTM on real PTB, reproducible in minutes: one epoch of the
// README's configuration (Zaremba et al.'s small model on sentence chains)
// brings validation perplexity below 200 (the full 13-epoch run reaches
// test perplexity ≤ 125; see README). Label `slow` (about 5 minutes on one
// core); skipped when PTB is not available.
#include <gtest/gtest.h>

#include "lm_training.h"
#include "ptb.h"
#include "support/test_util.h"

namespace sylva::examples {
namespace {

TEST(VarLstmPtb, OneEpochBringsValidPerplexityBelow200) {
  const std::string dir = test::data_dir();
  if (dir.empty()) GTEST_SKIP() << "PTB not found (set SYLVA_DATA to the folder holding ptb/)";
  PtbCorpus ptb = load_ptb(dir + "/ptb");
  const int32_t eos = ptb.vocab.id("<eos>");
  LmData d{sentence_chains(ptb.train, eos, ptb.vocab.size(), "ptb.train.txt"),
           sentence_chains(ptb.valid, eos, ptb.vocab.size(), "ptb.valid.txt"),
           sentence_chains(ptb.test, eos, ptb.vocab.size(), "ptb.test.txt")};
  LmTrainOptions o;  // 2 x 200, U(±0.1), SGD lr 1, clip 5, batch 20
  o.model.vocab = ptb.vocab.size();
  o.epochs = 1;
  o.progress_seconds = 30;
  o.name = "var_lstm slow test";
  LmTrainResult r = train_lm(d, o, stdout);
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_LT(r.epochs[0].valid_ppl, 200.0);
  EXPECT_LT(r.test_ppl, 200.0);
}

}  // namespace
}  // namespace sylva::examples
