#!/usr/bin/env bash
# The ablation and roofline of docs/benchmarks.md ("Engine optimisations"):
# Sylva's training throughput with no optimisation, each one alone, and all
# (one thread, median of 3 repeats), then bench_roofline's FLOP rate of a
# Tree-LSTM epoch against Eigen's GEMM rate at the same shapes. Needs SST
# and PTB (shared/data or $SYLVA_DATA). SETS="none all" runs only those
# sets; ROOFLINE=0 leaves out the roofline.
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
flags=(--no-skip-zero-work --no-lazy --no-eager --no-fusion)
# name -> the flags that switch the others off
declare -A sets=([none]="${flags[*]}" [all]="")
for f in "${flags[@]}"; do
  name=${f#--no-}
  sets[$name]=$(printf '%s ' "${flags[@]}" | sed "s/$f //")
done
common=(--strategies sylva --mode train --repeats 3 --min-time ${MIN_TIME:-0.5} --warmup 1 --threads 1)
for name in ${SETS:-none skip-zero-work lazy eager fusion all}; do
  read -r -a off <<<"${sets[$name]}"
  echo "ablation: $name (off: ${off[*]:-nothing})"
  "$suite" --workload tree-lstm --batch 64,256 --hidden 150,512 "${common[@]}" "${off[@]}" --sweep "$name" \
    --csv "$out/tree-lstm-$name.csv"
  # Var-LSTM: the first 8192 (shuffled) PTB sentences are plenty for minibatches of 64.
  "$suite" --workload var-lstm --batch 64 --hidden 200,512 --max-samples 8192 "${common[@]}" "${off[@]}" \
    --sweep "$name" --csv "$out/var-lstm-$name.csv"
  if [[ $name == none || $name == eager || $name == all ]]; then
    "$suite" --workload var-lstm --batch 64 --hidden 200 --max-samples 8192 --projection-in-cell "${common[@]}" \
      "${off[@]}" --sweep "$name" --csv "$out/var-lstm-in-cell-$name.csv"
  fi
done
if [[ ${ROOFLINE:-1} != 0 ]]; then
  build/release/benchmarks/bench_roofline --hidden 150,512 --batch 256 --repeats 3 --json "$out/roofline.json" \
    | tee "$out/roofline.txt"
fi
echo "ablation: results in $out"
