// Fixed-LSTM (Cavs): the same LSTM language model on the PTB token stream
// cut into fixed-length chains (64 tokens by default).
#include "lm_example.h"

int main(int argc, char** argv) {
  return sylva::examples::lm_example_main(argc, argv, sylva::examples::LmSamples::stream);
}
