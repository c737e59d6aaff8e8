#!/usr/bin/env bash
# bf16 GEMMs against float32, whole training steps (forward, backward and
# Adam), at the points of issue 67's goals (docs/benchmarks.md, "bf16
# GEMMs"): `sylva` and `sylva-bf16` run interleaved in one bench_suite
# process per point, pinned to one core, so every ratio is of medians
# measured side by side. Where the tree was configured with
# SYLVA_DYNET_DIR, the Tree-LSTM points at h 512, batch 16 and 64 also run
# DyNet with autobatching (float32: it has no bf16) in the same process.
#
#   bash scripts/bench_bf16.sh [results-dir]    (default docs/benchmark-results/bf16)
#
# Environment: SYLVA_BUILD (the build tree, default build/release), REPEATS
# (5), MIN_TIME (1.0 s per repeat), MAX_SAMPLES (2048: the first N
# shuffled samples), DYNET_MEM (MB of DyNet pools, 4096), QUICK=1 (the
# Tree-LSTM points only, 3 short repeats).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/benchmark-results/bf16}
build=${SYLVA_BUILD:-build/release}
suite=$build/benchmarks/bench_suite
[[ -x $suite ]] || { echo "bench_bf16: no $suite (build bench_suite in $build, or set SYLVA_BUILD)" >&2; exit 1; }
repeats=${REPEATS:-5}
min_time=${MIN_TIME:-1.0}
quick=${QUICK:-0}
if [[ $quick != 0 ]]; then repeats=3; min_time=0.3; fi
mkdir -p "$out"
rm -f "$out"/*.csv

{
  echo "# bench_bf16 $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
  echo "# flags: $(grep -m1 -o 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "# cores: $(nproc), memory: $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "# git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
} | tee "$out/machine.txt"

strategies=sylva,sylva-bf16
if "$suite" --workload tree-lstm --list 2>/dev/null | grep -qx dynet-autobatch; then with_dynet=1; else with_dynet=0; fi
common=(--optimizer adam --lr 0.001 --repeats "$repeats" --min-time "$min_time" --threads 1
        --max-samples "${MAX_SAMPLES:-2048}" --dynet-mem "${DYNET_MEM:-4096}")

# point NAME ARGS...: one interleaved bench_suite run into $out/NAME.csv.
point() {
  local name=$1
  shift
  echo "== $name: $*"
  OMP_NUM_THREADS=1 taskset -c 0 "$suite" "${common[@]}" --csv "$out/$name.csv" "$@"
}

for h in 512 128; do
  batches=64,256
  [[ $h == 128 ]] && batches=64
  s=$strategies
  if [[ $h == 512 && $with_dynet == 1 ]]; then batches=16,64,256; s=$strategies,dynet-autobatch; fi
  point "tree-lstm-h$h" --workload tree-lstm --cell dynet --hidden "$h" --embed "$h" --batch "$batches" --strategies "$s"
done
if [[ $quick == 0 ]]; then
  point var-lstm --workload var-lstm --hidden 200 --embed 200 --layers 2 --batch 64 --strategies "$strategies"
  point tree-fc --workload tree-fc --hidden 256 --batch 64 --strategies "$strategies"
fi
echo "bench_bf16: results in $out; python3 scripts/bench_report.py regenerates docs/benchmarks.md"
