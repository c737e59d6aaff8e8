// The examples' training loops resume exactly: `epochs` epochs straight, or
// one epoch, saved (--save-state), then resumed (--resume) up to `epochs`,
// write byte-identical state files after the last epoch (parameters,
// optimiser, step, shuffling RNG, the loop's own counters).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "sylva/core/file.h"

namespace sylva::examples {

/// `train(options)` runs a loop (train_lm, train_sentiment); returns the
/// straight and the resumed run's results.
template <class Options, class Train>
auto check_resume(Options o, int64_t epochs, const std::string& name, Train&& train) {
  const std::string base = testing::TempDir() + name;
  o.epochs = epochs;
  o.save_state = base + "_straight.safetensors";
  auto straight = train(o);
  o.epochs = 1;
  o.save_state = base + "_first.safetensors";
  train(o);
  o.epochs = epochs;
  o.resume = o.save_state;
  o.save_state = base + "_resumed.safetensors";
  auto resumed = train(o);
  EXPECT_EQ(read_file(base + "_resumed.safetensors"), read_file(base + "_straight.safetensors"))
      << name << ": the resumed run's state after epoch " << epochs << " differs";
  return std::pair{std::move(straight), std::move(resumed)};
}

}  // namespace sylva::examples
