#!/usr/bin/env bash
# SST accuracy of bf16 GEMMs against float32 (issue 67): the README's
# Tree-LSTM configuration (examples/02_tree_lstm defaults: tai cell, d 300,
# h 150, Adagrad 0.05, batch 25, L2 1e-4, dropout 0.5, 10 epochs, model
# chosen on dev root accuracy), seeds 1-3, each precision, one thread on
# one core. Writes one CSV row per run (the columns of
# accuracy/sst-tree-lstm.csv plus `precision`); docs/benchmarks.md's
# "bf16 accuracy" table compares the means.
#
#   bash scripts/accuracy_bf16.sh [out.csv]    (default docs/benchmark-results/accuracy/sst-tree-lstm-bf16.csv)
#
# Environment: SYLVA_BUILD (build/release), SEEDS ("1 2 3"), CORE (1), EPOCHS (10).
#
# TASK=ptb instead trains the PTB Var-LSTM (examples/03_var_lstm defaults:
# 2 x 200, SGD lr 1 halved after epoch 4, clip 5, batch 20, 13 epochs) once
# per precision (seed 1), fp32 on core CORE and bf16 on core CORE2 (0) at
# the same time (PTB_ARGS: extra flags, e.g. "--epochs 1 --max-batches 5"
# for a try), and writes valid and test perplexity (default
# docs/benchmark-results/accuracy/ptb-lm-bf16.csv; about an hour).
set -euo pipefail
cd "$(dirname "$0")/.."

# machine_file TOOL PATH: when, on what and at which commit (bench_report.py reads it).
machine_file() {
  mkdir -p "$(dirname "$2")"
  {
    echo "# $1 $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
    echo "# git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
  } > "$2"
}

if [[ ${TASK:-sst} == ptb ]]; then
  out=${1:-docs/benchmark-results/accuracy/ptb-lm-bf16.csv}
  lm=${SYLVA_BUILD:-build/release}/examples/03_var_lstm/var_lstm
  [[ -x $lm ]] || { echo "accuracy_bf16: no $lm (build var_lstm, or set SYLVA_BUILD)" >&2; exit 1; }
  machine_file accuracy_bf16-ptb "$(dirname "$out")/machine-ptb-bf16.txt"
  logs=()
  for precision in fp32 bf16; do
    core=${CORE:-1}
    [[ $precision == bf16 ]] && core=${CORE2:-0}
    log=$(mktemp)
    logs+=("$precision:$log")
    (
      start=$(date +%s)
      taskset -c "$core" "$lm" --threads 1 --seed 1 --precision "$precision" ${PTB_ARGS:-} > "$log" 2>&1
      echo "wall $(( $(date +%s) - start ))" >> "$log"
    ) &
  done
  wait
  echo "system,model,precision,seed,valid_ppl,test_ppl,epochs,wall_s" > "$out"
  for entry in "${logs[@]}"; do
    precision=${entry%%:*}
    log=${entry#*:}
    # "var_lstm: test perplexity T after E epochs | valid V | ..."
    line=$(grep -m1 '^var_lstm: test perplexity' "$log") || { cat "$log" >&2; exit 1; }
    read -r test epochs valid < <(sed -E 's/^var_lstm: test perplexity ([0-9.]+) after ([0-9]+) epochs \| valid ([0-9.]+) .*/\1 \2 \3/' <<< "$line")
    wall=$(awk '/^wall /{print $2}' "$log")
    echo "Sylva,Var-LSTM (one chain per sentence; no state carried),$precision,1,$valid,$test,$epochs,$wall" >> "$out"
    rm -f "$log"
  done
  echo "accuracy_bf16: $out"
  exit 0
fi
out=${1:-docs/benchmark-results/accuracy/sst-tree-lstm-bf16.csv}
bin=${SYLVA_BUILD:-build/release}/examples/02_tree_lstm/tree_lstm
[[ -x $bin ]] || { echo "accuracy_bf16: no $bin (build tree_lstm, or set SYLVA_BUILD)" >&2; exit 1; }
machine_file accuracy_bf16 "$(dirname "$out")/machine-sst-bf16.txt"
echo "system,cell,optimizer,precision,seed,test_fine_correct,test_fine_total,test_binary_correct,test_binary_total,epochs,best_dev_epoch,wall_s" > "$out"
for seed in ${SEEDS:-1 2 3}; do
  for precision in fp32 bf16; do
    log=$(mktemp)
    start=$(date +%s)
    taskset -c "${CORE:-1}" "$bin" --epochs "${EPOCHS:-10}" --seed "$seed" --threads 1 --precision "$precision" | tee "$log"
    wall=$(( $(date +%s) - start ))
    # "best dev epoch E: test root fine-grained F% (c/t), binary B% (c/t) | total ..."
    line=$(grep -m1 '^best dev epoch' "$log") || { echo "accuracy_bf16: no result line in the run's output" >&2; exit 1; }
    read -r epoch fc ft bc bt < <(sed -E 's/^best dev epoch ([0-9]+): .*\(([0-9]+)\/([0-9]+)\), binary .*\(([0-9]+)\/([0-9]+)\).*/\1 \2 \3 \4 \5/' <<< "$line")
    echo "Sylva,tai,adagrad,$precision,$seed,$fc,$ft,$bc,$bt,${EPOCHS:-10},$epoch,$wall" >> "$out"
    rm -f "$log"
  done
done
echo "accuracy_bf16: $out"
