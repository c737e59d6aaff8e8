#!/usr/bin/env bash
# A/B: the code before (1714eb8) and after (1856298) the two-thread GEMM/fused split, both built
# Release without CUDA in worktrees; Sylva only, --threads 2 on 2 cores, OMP_WAIT_POLICY=active, Adam; 3 rounds interleaved.
out=$1
mkdir -p $out
for round in 1 2 3; do
  for cell in tai dynet; do
    for h in 128 512; do
      for which in before after; do
        OMP_WAIT_POLICY=active SYLVA_DATA=/work/shared/data taskset -c 0,1 /tmp/wt-$which/build/benchmarks/bench_suite \
          --workload tree-lstm --cell $cell --strategies sylva --batch 1,16,64 --threads 2 --hidden $h --embed $h \
          --optimizer adam --lr 0.001 --repeats 3 --min-time 1 --csv $out/$which-$cell-h$h-r$round.csv > /dev/null 2>&1
      done
    done
  done
done
