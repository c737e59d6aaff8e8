#!/usr/bin/env bash
# A/B of the transposed-weights experiment (ExecutorOptions::transposed_weights, --no-transposed-weights),
# run 2026-12-06 on a build of bcca041 plus that change, which was not kept: the flag does not exist in the repository.
B=${B:-build/release/benchmarks/bench_suite}
export SYLVA_DATA=${SYLVA_DATA:-/work/shared/data}
for round in 1 2 3; do
  for cfg in "dynet 512" "tai 512" "dynet 128" "tai 128"; do
    set -- $cfg
    for f in on off; do
      flag=(); [[ $f == off ]] && flag=(--no-transposed-weights)
      taskset -c 0 $B --workload tree-lstm --cell $1 --strategies sylva --batch 1,16,64 --hidden $2 --embed $2 \
        --threads 1 --optimizer adam --repeats 3 --min-time 1 "${flag[@]}" 2>/dev/null |
        awk -v r=$round -v f=$f -v c=$1 '$3 == "train" {print "round", r, f, "cell", c, "h", $5, "batch", $4, "trees/s", $7}'
    done
  done
done
