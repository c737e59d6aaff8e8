#!/usr/bin/env bash
# A/B of relu's gradient read from relu's output (2026-12-06): OLD =
# bench_suite at 1a11f4f (relu_grad reads the pre-activation), NEW = at
# fa9cc71 (it reads the output). Tree-FC only (the one workload with a
# relu). 4 interleaved rounds, which binary runs first alternating, each
# process pinned to one core, training with Adam. One line per run:
# round, binary, workload, h, batch, units/s, vals MB, RSS MB.
OLD=${OLD:?bench_suite at 1a11f4f}
NEW=${NEW:?bench_suite at fa9cc71}
for round in 1 2 3 4; do
  order="new old"; (( round % 2 == 0 )) && order="old new"
  for v in $order; do
    bin=$NEW; [[ $v == old ]] && bin=$OLD
    taskset -c 0 $bin --workload tree-fc --strategies sylva --batch 16,64 --hidden 256 --threads 1 --optimizer adam \
      --repeats 3 --min-time 1 2>/dev/null |
      awk -v r=$round -v b=$v '$3 == "train" {print "round", r, b, $1, "h", $5, "batch", $4, "units/s", $7, "vals", $(NF-1), "rss", $NF}'
  done
done
