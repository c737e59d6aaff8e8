#!/usr/bin/env bash
# Interleaved A/B of two bench_suite runs, training (by default with Adam on one core):
#   A="build/release/benchmarks/bench_suite" B="build/release/benchmarks/bench_suite --no-fusion" \
#     bash scripts/ab_bench.sh > out.txt && python3 scripts/ab_table.py out.txt
# A and B are a bench_suite binary and its flags; NAME_A and NAME_B label
# them (default "a" and "b"). CONFIGS: "workload h batches" entries split by
# ';' (default Tree-FC h 256, Tree-LSTM h 150 and Var-LSTM h 200, each at
# batches 16 and 64). ROUNDS rounds (default 4), which of A and B runs
# first alternating, each process pinned to core ${CORE:-0} (a list such as
# 0,1 for two cores) with --threads ${THREADS:-1} and --optimizer
# ${OPTIMIZER:-adam}, 3 repeats of at least 1 s. One line per run: round, label, workload, h,
# batch, units/s, values MB, peak RSS MB.
set -euo pipefail
A=${A:?A: a bench_suite binary and its flags}
B=${B:?B: a bench_suite binary and its flags}
NAME_A=${NAME_A:-a} NAME_B=${NAME_B:-b}
CONFIGS=${CONFIGS:-"tree-fc 256 16,64;tree-lstm 150 16,64;var-lstm 200 16,64"}
export SYLVA_DATA=${SYLVA_DATA:-/work/shared/data}
IFS=';' read -ra configs <<< "$CONFIGS"
for round in $(seq 1 "${ROUNDS:-4}"); do
  for cfg in "${configs[@]}"; do
    read -r workload hidden batches <<< "$cfg"
    order=(a b); (( round % 2 == 0 )) && order=(b a)
    for v in "${order[@]}"; do
      if [[ $v == a ]]; then cmd=$A label=$NAME_A; else cmd=$B label=$NAME_B; fi
      extra=(); [[ $workload == var-lstm ]] && extra=(--max-samples 4096)
      # shellcheck disable=SC2086  # $cmd is a binary and its flags
      taskset -c "${CORE:-0}" $cmd --workload "$workload" --strategies sylva --batch "$batches" --hidden "$hidden" \
        --threads "${THREADS:-1}" --optimizer "${OPTIMIZER:-adam}" --repeats 3 --min-time 1 "${extra[@]}" 2>/dev/null |
        awk -v r="$round" -v b="$label" '$3 == "train" {print "round", r, b, $1, "h", $5, "batch", $4, "units/s", $7, "vals", $(NF-1), "rss", $NF}'
    done
  done
done
