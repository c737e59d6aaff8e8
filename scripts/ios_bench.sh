#!/usr/bin/env bash
# IOS measurements for docs/benchmarks.md: the CNN graphs under the
# profiling cost model (every variant's plans run end to end), and the
# effect of IOS plans on Tree-LSTM / Var-LSTM training throughput with the
# cell written gate by gate. Env: BUILD (default build), OUT (default
# build/ios_bench), BATCHES (default "1 16"), PRUNING (default "1,3 2,4 3,8"),
# GRAPHS (default the four networks), CELLS=0 to skip the cell runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-build/ios_bench}
mkdir -p "$OUT"
cmake --build "$BUILD" --target bench_ios bench_suite
if [ "${CELLS:-1}" != 0 ]; then
  for w in tree-lstm var-lstm; do
    for form in "stacked:" "per-gate,no-ios:--per-gate --no-ios" "per-gate,ios:--per-gate"; do
      name=${form%%:*}
      flags=${form#*:}
      # shellcheck disable=SC2086
      "$BUILD"/benchmarks/bench_suite --workload "$w" --strategies sylva --batch 64 --repeats 7 --min-time 1 \
        --sweep "$name" $flags --csv "$OUT/cells_${w}_${name//,/_}.csv" | tee -a "$OUT/cells.txt"
    done
  done
fi
for b in ${BATCHES:-1 16}; do
  "$BUILD"/benchmarks/bench_ios --cost profile --batch "$b" --cores 2 --repeats 7 \
    --graphs "${GRAPHS:-inception_v3;squeezenet;randwire_large;nasnet_large}" \
    --pruning ${PRUNING:-1,3 2,4 3,8} | tee "$OUT/cnn_batch$b.txt"
done
