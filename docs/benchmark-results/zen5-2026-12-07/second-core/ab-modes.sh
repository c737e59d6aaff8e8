#!/bin/bash
# Variants of the small-work thresholds, --threads 2 on cores 0,1, each run labelled by the
# cross-core round trip measured just before and after it (fast < 150 ns <= slow).
cd /work/main
S=build/release/benchmarks/bench_suite
declare -A V=( [base]="EXP_GEMM_MIN=0" [g1e6]="EXP_GEMM_MIN=1e6 EXP_GEMM_BOTH=1" [g1e6o256k]="EXP_GEMM_MIN=1e6 EXP_GEMM_BOTH=1 EXP_OPT_MIN=262144" )
IFS=';' read -ra configs <<< "${CONFIGS:-dynet 128 1 adagrad;dynet 128 16 adagrad;dynet 128 1 adam;tai 128 1 adagrad;dynet 512 1 adagrad;dynet 512 16 adagrad}"
rt() { /tmp/memprobe/pp | head -1 | awk '{print $3}'; }
for round in $(seq 1 ${ROUNDS:-3}); do
  for c in "${configs[@]}"; do
    read -r cell h b opt <<< "$c"
    for v in one base g1e6 g1e6o256k; do
      r0=$(rt)
      cores=0,1 threads=2; [[ $v == one ]] && cores=0 threads=1
      out=$(env ${V[$v]:-X=1} taskset -c $cores $S --workload tree-lstm --strategies sylva --cell $cell --hidden $h --embed $h --batch $b --threads $threads --optimizer $opt --repeats 3 --min-time 1 2>/dev/null | grep " sylva " | awk '{print $7, $10, $11}')
      r1=$(rt)
      echo "$round $cell $h $b $opt $v $r0 $r1 $out"
    done
  done
done
