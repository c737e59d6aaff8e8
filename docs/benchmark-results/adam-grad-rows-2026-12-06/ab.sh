#!/usr/bin/env bash
# A/B of cd8e7e3 (Adam does not read the gradient outside its rows) against 801ba3c, both built Release without CUDA
# in worktrees (/tmp/wt-b2 before, /tmp/wt-a2 after); Sylva only, one core, Adam, tai cell; 3 interleaved rounds.
out=$1
mkdir -p "$out"
for round in 1 2 3; do
  for h in 128 512; do
    for which in b2 a2; do
      SYLVA_DATA=/work/shared/data taskset -c 0 /tmp/wt-$which/build/benchmarks/bench_suite --workload tree-lstm \
        --cell tai --strategies sylva --batch 1,16 --threads 1 --hidden $h --embed $h --optimizer adam --lr 0.001 \
        --repeats 3 --min-time 1 --csv "$out/$which-h$h-r$round.csv" > /dev/null 2>&1
    done
  done
done
