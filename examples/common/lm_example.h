// The command line of the var_lstm and fixed_lstm examples: both train the
// same LSTM language model on PTB and differ only in how the text becomes
// chains.
#pragma once

namespace sylva::examples {

enum class LmSamples {
  sentences,  ///< Var-LSTM: one chain per sentence, variable length, no padding
  stream,     ///< Fixed-LSTM: the token stream cut into fixed-length chains
};

/// Parses flags (--help lists them), loads PTB, trains and prints progress,
/// validation perplexity per epoch and test perplexity. Returns the exit code.
int lm_example_main(int argc, char** argv, LmSamples samples);

}  // namespace sylva::examples
