#!/usr/bin/env bash
# Builds Sylva (Release, build/release: the same configuration as
# scripts/run_tests.sh, so the two share one build) and runs the Tree-LSTM
# example. Arguments are passed to the example:
#   bash scripts/demo.sh [tree_lstm options...]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_WERROR=ON
# Build only the example when Ninja knows its target, everything otherwise.
if ninja -C build/release -t targets all 2>/dev/null | grep -q '^tree_lstm:'; then
  cmake --build build/release -j"$(nproc)" --target tree_lstm
else
  cmake --build build/release -j"$(nproc)"
fi
exec build/release/examples/02_tree_lstm/tree_lstm "$@"
