// Var-LSTM (Cavs): a 2-layer LSTM language model on Penn Treebank, one
// variable-length chain per sentence, batched by BFS without padding.
// Default flags are Zaremba et al.'s "small" configuration.
#include "lm_example.h"

int main(int argc, char** argv) {
  return sylva::examples::lm_example_main(argc, argv, sylva::examples::LmSamples::sentences);
}
