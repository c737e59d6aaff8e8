#!/usr/bin/env bash
# Ablation of ExecutorOptions::task_local_values: the same binary with and
# without --no-task-local, 3 interleaved rounds, one core, training with Adam.
# Prints one line per run: round, on|off, workload, h, batch, units/s, vals MB, RSS MB.
B=${B:-build/release/benchmarks/bench_suite}
export SYLVA_DATA=${SYLVA_DATA:-/work/shared/data}
for round in 1 2 3; do
  for cfg in "tree-lstm 150 16,64,256" "tree-lstm 512 16,64" "var-lstm 200 16,64" "tree-fc 256 16,64"; do
    set -- $cfg
    for f in on off; do
      flag=(); [[ $f == off ]] && flag=(--no-task-local)
      extra=(); [[ $1 == var-lstm ]] && extra=(--max-samples 4096)
      taskset -c 0 $B --workload $1 --strategies sylva --batch $3 --hidden $2 --threads 1 --optimizer adam \
        --repeats 3 --min-time 1 "${extra[@]}" "${flag[@]}" 2>/dev/null |
        awk -v r=$round -v f=$f '$3 == "train" {print "round", r, f, $1, "h", $5, "batch", $4, "units/s", $7, "vals", $(NF-1), "rss", $NF}'
    done
  done
done
