#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/distributed.md): the
# Tree-LSTM on SST (d = h = 150) and the Var-LSTM on PTB (embed = hidden =
# 200), global batch 64, one process with one thread against two MPI ranks
# with one thread each, REPEATS runs of each, interleaved. Prints each
# run's training throughput (the examples' "epoch 1 done" line: training
# steps only, evaluation excluded), then median (min..max) and the ratio,
# and rank 0's balance and traffic lines (--profile).
#
#   bash scripts/bench_distributed.sh [BUILD_DIR]      (default build/release)
#   REPEATS=5 TREES=8544 LM_BATCHES=100 bash scripts/bench_distributed.sh
set -euo pipefail
build=${1:-build/release}
repeats=${REPEATS:-3}
trees=${TREES:-8544}          # SST training trees (all of them by default)
lm_batches=${LM_BATCHES:-60}  # Var-LSTM minibatches per run
export SYLVA_DATA=${SYLVA_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader,tcp
        --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
tree=("$build/examples/02_tree_lstm/tree_lstm" --dim 150 --hidden 150 --batch 64 --epochs 1 --threads 1
      --max-train "$trees" --profile --progress-seconds 1000)
lm=("$build/examples/03_var_lstm/var_lstm" --embed 200 --hidden 200 --batch 64 --epochs 1 --threads 1
    --max-batches "$lm_batches" --profile --progress-seconds 1000)
for bin in "${tree[0]}" "${lm[0]}"; do
  [[ -x $bin ]] || { echo "bench_distributed: $bin not built (cmake --build $build)" >&2; exit 1; }
done
log=$(mktemp -d)
echo "bench_distributed: logs in $log; $repeats repeats; SST trees $trees, PTB batches $lm_batches"

# rate <log> <workload>: the training throughput of one run.
rate() {
  if [[ $2 == tree ]]; then
    sed -n 's/^epoch 1 done in .* (\([0-9.]*\) sent\/s).*/\1/p' "$1"
  else
    sed -n 's/^\[var_lstm\] epoch 1 done in .* | \([0-9.]*\) words\/s$/\1/p' "$1"
  fi
}

declare -A rates
for ((i = 1; i <= repeats; i++)); do
  for w in tree lm; do
    declare -n cmd=$w
    "${cmd[@]}" > "$log/$w.1.$i.txt" 2>&1
    "${mpirun[@]}" -np 2 "${cmd[@]}" --distributed > "$log/$w.2.$i.txt" 2>&1
    for np in 1 2; do
      r=$(rate "$log/$w.$np.$i.txt" "$w")
      [[ -n $r ]] || { echo "bench_distributed: no rate in $log/$w.$np.$i.txt" >&2; exit 1; }
      rates[$w.$np]+="$r "
      echo "run $i $w ranks=$np: $r"
    done
  done
done

python3 - "$log" "${rates[tree.1]}" "${rates[tree.2]}" "${rates[lm.1]}" "${rates[lm.2]}" <<'EOF'
import statistics, sys
log, t1, t2, l1, l2 = sys.argv[1:]
def s(v): v = sorted(map(float, v.split())); return statistics.median(v), v[0], v[-1]
for name, unit, a, b in (("Tree-LSTM SST h=150", "trees/s", t1, t2), ("Var-LSTM PTB h=200", "words/s", l1, l2)):
    (m1, lo1, hi1), (m2, lo2, hi2) = s(a), s(b)
    print(f"{name}: 1 rank {m1:.1f} ({lo1:.1f}..{hi1:.1f}) {unit} | 2 ranks {m2:.1f} ({lo2:.1f}..{hi2:.1f}) | "
          f"speedup {m2 / m1:.2f}x (range {lo2 / hi1:.2f}..{hi2 / lo1:.2f})")
EOF
echo "balance and traffic (last 2-rank run of each):"
grep -h "\] rank [0-9]:" "$log/tree.2.$repeats.txt" "$log/lm.2.$repeats.txt"
