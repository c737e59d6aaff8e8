#!/usr/bin/env bash
# A/B of two changes at the apply's boundary (2026-12-06): direct row
# selection (ExecutorOptions::direct_row_selection) and message gradients
# written by their one parent. OLD: bench_suite built at the commit before
# both; NEW: built with both; NEW with --no-direct-selection keeps only the
# second. 3 interleaved rounds, each process pinned to one core, training
# with Adam. One line per run: round, binary, workload, h, batch, units/s,
# vals MB, RSS MB.
OLD=${OLD:?path of the bench_suite built before the change}
NEW=${NEW:-build/release/benchmarks/bench_suite}
export SYLVA_DATA=${SYLVA_DATA:-/work/shared/data}
for round in 1 2 3; do
  for cfg in "tree-fc 256 16,64" "tree-lstm 150 16,64" "var-lstm 200 16,64"; do
    set -- $cfg
    for v in old new new-no-direct; do
      bin=$NEW; [[ $v == old ]] && bin=$OLD
      flag=(); [[ $v == new-no-direct ]] && flag=(--no-direct-selection)
      extra=(); [[ $1 == var-lstm ]] && extra=(--max-samples 4096)
      taskset -c 0 $bin --workload $1 --strategies sylva --batch $3 --hidden $2 --threads 1 --optimizer adam \
        --repeats 3 --min-time 1 "${extra[@]}" "${flag[@]}" 2>/dev/null |
        awk -v r=$round -v b=$v '$3 == "train" {print "round", r, b, $1, "h", $5, "batch", $4, "units/s", $7, "vals", $(NF-1), "rss", $NF}'
    done
  done
done
