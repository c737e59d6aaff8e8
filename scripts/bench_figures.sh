#!/usr/bin/env bash
# The data of docs/benchmarks.md's "Against the DyNet-style engines,
# padding and libtorch" section: builds the release tree, runs bench_suite
# over the Cavs-style experiments (one thread), then
# scripts/plot_benchmarks.py (every sweep's table and figure). Copy the CSVs
# to a new docs/benchmark-results/ folder and point scripts/bench_report.py
# at it to update the docs. Needs the SST and PTB data (shared/data or
# $SYLVA_DATA). About 65 minutes on a 2-core machine with DyNet and libtorch.
#
#   bash scripts/bench_figures.sh [results-dir]   (default build/bench-results)
#
# QUICK=1 runs a small smoke version (few sizes, short repeats; about 10
# minutes), with its figures in <results-dir>/figures, not docs/figures.
# Every process is pinned to one core (taskset -c 0), so no strategy gets a
# second one. The real DyNet joins the strategies where SYLVA_DYNET_DIR (or
# /tmp/dynet-build) holds a build of ../shared/peers/build_dynet.sh
# (DYNET_MEM: MB of its pools, default 16384: DyNet cannot grow its pools
# under autobatching, and Fixed-LSTM at batch 256 -- 16,384 tokens of
# 10,000-way logits -- aborts at 4096; untouched pool pages cost no
# memory). WORKLOADS (default all four) picks workloads; the Fig. 9 sweep
# runs with tree-fc. A strategy that fails is named and the run goes on;
# the script then exits non-zero. OPTIMIZER (default none:
# forward and backward only, as the libtorch strategies have no update)
# times each system's own optimiser in every step; scripts/bench_dynet.sh
# runs the whole-step comparison with DyNet.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-build/bench-results}
mkdir -p "$out"
bash scripts/install_deps.sh
# The plots need matplotlib; the libtorch baselines need libtorch-dev (about
# 0.5 GB installed) and an optimised BLAS for it (Debian's libtorch calls
# whatever libblas.so.3 is selected; the reference BLAS is ~15x slower).
# SYLVA_BENCH_TORCH=0 leaves libtorch out.
extra=(python3-matplotlib)
[[ ${SYLVA_BENCH_TORCH:-1} != 0 ]] && extra+=(libtorch-dev libopenblas0-openmp)
missing=()
for p in "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "bench_figures: installing ${missing[*]}"
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
dynet_dir=${SYLVA_DYNET_DIR:-}
[[ -z $dynet_dir && -f /tmp/dynet-build/dynet/libdynet.so ]] && dynet_dir=/tmp/dynet-build
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_DYNET_DIR="$dynet_dir"
cmake --build build/release --target bench_suite
suite="taskset -c 0 build/release/benchmarks/bench_suite"

if [[ ${QUICK:-0} != 0 ]]; then
  batches="1,16"; big_batch=64; hiddens="64,256"; leaves="32,128"; repeats=2; min_time=0.2; max=512
  movement_batches="16,64"
else
  batches="1,4,16,256"; big_batch=64; hiddens="64,128,256,512,1024"; leaves="32,64,128,256,512,1024"
  repeats=3; min_time=0.5; max=0
  movement_batches="16,64,256"
fi
common=(--threads 1 --repeats "$repeats" --min-time "$min_time" --max-samples "$max"
        --optimizer "${OPTIMIZER:-none}" --dynet-mem "${DYNET_MEM:-16384}")
workloads=${WORKLOADS:-tree-lstm var-lstm fixed-lstm tree-fc}
failed=()

{
  echo "# bench_figures $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
  echo "# cores: $(nproc), memory: $(free -g | awk '/Mem:/{print $2}') GiB, kernel: $(uname -r)"
  echo "# git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
} > "$out/machine.txt"
cat "$out/machine.txt"

# The strategies of the hidden-size and movement sweeps: Sylva, the
# dynamic-declaration engine, padding, and the libtorch model users reach for.
focus() {
  local all
  all=$($suite --workload "$1" --list | tr '\n' ' ')
  local pick=()
  for s in sylva dynamic-decl dynamic-decl-autobatch padded libtorch-levels libtorch-packed dynet-autobatch; do
    [[ " $all " == *" $s "* ]] && pick+=("$s")
  done
  (IFS=,; echo "${pick[*]}")
}

# One process per strategy, so that peak resident memory is the strategy's own
# (plus what every run holds: libraries and the dataset).
each() {  # each <csv-prefix> <strategies> <bench_suite args...>
  local prefix=$1 strategies=$2
  shift 2
  local s
  for s in ${strategies//,/ }; do
    if ! $suite --strategies "$s" "$@" --csv "$prefix-$s.csv"; then
      echo "bench_figures: FAILED: $s for $(basename "$prefix"); $prefix-$s.csv is incomplete" >&2
      failed+=("$s for $(basename "$prefix")")
    fi
  done
}

for w in $workloads; do
  all=$($suite --workload "$w" --list | paste -sd, -)
  # Fig. 8: throughput vs batch size (train and inference); batch 64 also
  # gives Table 1 (epoch time estimated from the measured rate).
  each "$out/$w-batch" "$all" --workload "$w" --batch "$batches" --mode both --sweep batch "${common[@]}"
  each "$out/$w-batch64" "$all" --workload "$w" --batch "$big_batch" --mode both --sweep batch+epoch --epoch \
    "${common[@]}"
  # Fig. 8: throughput vs hidden size at batch 64 (training).
  each "$out/$w-hidden" "$(focus "$w")" --workload "$w" --batch 64 --hidden "$hiddens" --mode train --sweep hidden \
    "${common[@]}"
  # Table 2: memory movement vs computation (clock reads around every op).
  each "$out/$w-movement" "$(focus "$w")" --workload "$w" --batch "$movement_batches" --mode both --sweep movement \
    --measure-movement "${common[@]}"
done
# Fig. 9: graph construction vs graph size (Tree-FC, batch 16).
if [[ " $workloads " == *" tree-fc "* ]]; then
  each "$out/tree-fc-leaves" sylva,dynamic-decl,dynamic-decl-autobatch --workload tree-fc --leaves "$leaves" \
    --batch 16 --trees 96 --mode train --sweep leaves "${common[@]}"
fi

# The full run replaces docs/figures; a QUICK run keeps its figures apart.
figures=docs/figures
[[ ${QUICK:-0} != 0 ]] && figures=$out/figures
/usr/bin/python3 scripts/plot_benchmarks.py "$out" --out "$figures" --tables "$out/tables.md"
echo "bench_figures: tables in $out/tables.md, figures in $figures"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "bench_figures: ${#failed[@]} run(s) failed: ${failed[*]}" >&2
  exit 1
fi
