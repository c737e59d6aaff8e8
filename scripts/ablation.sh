#!/usr/bin/env bash
# The ablation and roofline of docs/benchmarks.md ("Engine optimisations"):
# Sylva's training throughput with no optimisation, each one alone, and all
# (one thread, median of 3 repeats), then bench_roofline's FLOP rate of a
# Tree-LSTM epoch against its GEMM kernel's rate at the same shapes. Needs SST
# and PTB (shared/data or $SYLVA_DATA). About an hour on 2 cores.
# SETS="none all" runs only those sets; THREADS2=0 leaves out the
# two-thread runs, ROOFLINE=0 the roofline.
#
#   bash scripts/ablation.sh [results-dir]   (default build/ablation)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/ablation}
mkdir -p "$out"
bash scripts/install_deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build/release --target bench_suite bench_roofline
suite=build/release/benchmarks/bench_suite
flags=(--no-skip-zero-work --no-lazy --no-eager --no-fusion --no-streaming)
# A set names the optimisations that stay on; the others are switched off.
# Streaming moves the work eager and lazy batching take out of the loop, so
# it is measured on top of those two.
declare -A sets=([none]="" [skip-zero-work]="skip-zero-work" [lazy]="lazy" [eager]="eager" [fusion]="fusion"
                 [eager+lazy]="eager lazy" [eager+lazy+streaming]="eager lazy streaming"
                 [all]="skip-zero-work lazy eager fusion streaming")
common=(--strategies sylva --mode train --repeats 3 --min-time ${MIN_TIME:-1} --warmup 1)
for name in ${SETS:-none skip-zero-work lazy eager fusion eager+lazy eager+lazy+streaming all}; do
  off=()
  for f in "${flags[@]}"; do
    [[ " ${sets[$name]} " == *" ${f#--no-} "* ]] || off+=("$f")
  done
  echo "ablation: $name (off: ${off[*]:-nothing})"
  "$suite" --workload tree-lstm --batch 64,256 --hidden 150,512 "${common[@]}" --threads 1 "${off[@]}" --sweep "$name" \
    --csv "$out/tree-lstm-$name.csv"
  # Var-LSTM: the first 8192 (shuffled) PTB sentences are plenty for minibatches of 64.
  "$suite" --workload var-lstm --batch 64 --hidden 200,512 --max-samples 8192 "${common[@]}" --threads 1 "${off[@]}" \
    --sweep "$name" --csv "$out/var-lstm-$name.csv"
  if [[ $name == none || $name == eager || $name == eager+lazy* || $name == all ]]; then
    "$suite" --workload var-lstm --batch 64 --hidden 200 --max-samples 8192 --projection-in-cell "${common[@]}" \
      --threads 1 "${off[@]}" --sweep "$name" --csv "$out/var-lstm-in-cell-$name.csv"
  fi
done
# Two threads for the GEMMs, everything on, and with streaming off.
if [[ ${THREADS2:-1} != 0 ]]; then
  for name in all all-but-streaming; do
    off=(); [[ $name == all-but-streaming ]] && off=(--no-streaming)
    echo "ablation: $name, 2 threads"
    "$suite" --workload tree-lstm --batch 64,256 --hidden 150,512 "${common[@]}" --threads 2 "${off[@]}" \
      --sweep "$name-2threads" --csv "$out/tree-lstm-$name-2threads.csv"
    "$suite" --workload var-lstm --batch 64 --hidden 200,512 --max-samples 8192 "${common[@]}" --threads 2 \
      "${off[@]}" --sweep "$name-2threads" --csv "$out/var-lstm-$name-2threads.csv"
  done
fi
if [[ ${ROOFLINE:-1} != 0 ]]; then
  build/release/benchmarks/bench_roofline --hidden 150,512 --batch 256 --repeats 3 --json "$out/roofline.json" \
    | tee "$out/roofline.txt"
fi
echo "ablation: results in $out"
