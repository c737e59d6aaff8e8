#!/usr/bin/env bash
# IOS measurements for docs/benchmarks.md: the CNN graphs under the
# profiling cost model (every variant's plans run end to end), and the
# effect of IOS plans on Tree-LSTM / Var-LSTM training throughput with the
# cell written gate by gate. Env: BUILD (default build), OUT (default
# build/ios_bench; the CNN runs write machine.txt and profile-batch<b>.csv there, what
# docs/benchmark-results/ios-cpu/ holds), BATCHES (default "1 16"; none: no CNN runs), PRUNING (default "1,3"),
# GRAPHS (default the four networks), CELLS=0 to skip the cell runs, ROUNDS
# (default 3) rounds of the cell runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-build/ios_bench}
mkdir -p "$OUT"
cmake --build "$BUILD" --target bench_ios bench_suite
if [ "${CELLS:-1}" != 0 ]; then
  # The three forms take turns, ROUNDS rounds of 3 repeats each, so drifting
  # load hits them alike; cells.csv gets every round's row (column "sweep"
  # names the form).
  rm -f "$OUT/cells.csv"
  for round in $(seq "${ROUNDS:-3}"); do
    for w in tree-lstm var-lstm; do
      for form in "stacked:" "per-gate-no-ios:--per-gate --no-ios" "per-gate-ios:--per-gate"; do
        name=${form%%:*}
        flags=${form#*:}
        # shellcheck disable=SC2086
        "$BUILD"/benchmarks/bench_suite --workload "$w" --strategies sylva --batch 64 --repeats 3 --min-time 1 \
          --sweep "$name" $flags --csv "$OUT/cells_round.csv" | grep -v '^#' | tail -n +2 | sed "s/^/round $round $name: /"
        if [ -f "$OUT/cells.csv" ]; then tail -n +2 "$OUT/cells_round.csv" >> "$OUT/cells.csv"
        else cp "$OUT/cells_round.csv" "$OUT/cells.csv"; fi
      done
    done
  done | tee "$OUT/cells.txt"
  python3 - "$OUT/cells.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for w in sorted({r["workload"] for r in rows}):
    for form in ("stacked", "per-gate-no-ios", "per-gate-ios"):
        rs = [r for r in rows if r["workload"] == w and r["sweep"] == form]
        if not rs:
            continue
        med = statistics.median(float(r["units_per_s"]) for r in rs)
        lo = min(float(r["units_per_s_min"]) for r in rs)
        hi = max(float(r["units_per_s_max"]) for r in rs)
        print(f"{w:10} {form:16} {med:9.1f}  ({lo:.1f}-{hi:.1f}), {len(rs)} rounds")
PY
fi
{
  echo "# ios_bench $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
  echo "# cores: $(nproc)"
  echo "# git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
} > "$OUT/machine.txt"
for b in ${BATCHES:-1 16}; do
  [ "$b" = none ] && continue
  rm -f "$OUT/profile-batch$b.csv"
  "$BUILD"/benchmarks/bench_ios --cost profile --batch "$b" --cores 2 --repeats 7 \
    --graphs "${GRAPHS:-inception_v3;squeezenet;randwire_large;nasnet_large}" \
    --pruning ${PRUNING:-1,3} --explain --csv "$OUT/profile-batch$b.csv" | tee "$OUT/cnn_batch$b.txt"
done
