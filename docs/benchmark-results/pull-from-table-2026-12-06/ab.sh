#!/usr/bin/env bash
# A/B of pulling straight from the embedding table
# (ExecutorOptions::pull_from_table, 2026-12-06): one bench_suite, the
# option on (default) and off (--no-pull-from-table: the lookup laid out as
# [V, d] in vertex order first, its gradient too). 4 interleaved rounds
# (which variant runs first alternates),
# each process pinned to one core, training with Adam. One line per run:
# round, variant, workload, h, batch, units/s, vals MB, RSS MB.
BIN=${BIN:-build/release/benchmarks/bench_suite}
export SYLVA_DATA=${SYLVA_DATA:-/work/shared/data}
for round in 1 2 3 4; do
  for cfg in "tree-fc 256 16,64" "tree-lstm 150 16,64" "var-lstm 200 16,64"; do
    set -- $cfg
    order="on off"; (( round % 2 == 0 )) && order="off on"  # alternate: no order bias
    for v in $order; do
      flag=(); [[ $v == off ]] && flag=(--no-pull-from-table)
      extra=(); [[ $1 == var-lstm ]] && extra=(--max-samples 4096)
      taskset -c 0 $BIN --workload $1 --strategies sylva --batch $3 --hidden $2 --threads 1 --optimizer adam \
        --repeats 3 --min-time 1 "${extra[@]}" "${flag[@]}" 2>/dev/null |
        awk -v r=$round -v b=$v '$3 == "train" {print "round", r, b, $1, "h", $5, "batch", $4, "units/s", $7, "vals", $(NF-1), "rss", $NF}'
    done
  done
done
