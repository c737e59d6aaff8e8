#!/usr/bin/env bash
# A/B of pushing from the message (docs/benchmarks.md). old: commit 99833c6 in a worktree,
#   git worktree add /tmp/old 99833c6 && cmake -S /tmp/old -B /tmp/old/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DSYLVA_BUILD_CUDA=ON -DSYLVA_DYNET_DIR=/tmp/dynet-build -DSYLVA_BUILD_PYTHON=OFF && ninja -C /tmp/old/build bench_suite
# new: build/release of the change. ab.sh: h = 128 (H), batches 1,16,64, 3 rounds; ab1.sh: one batch (B), 6 rounds.
set -u
old=/tmp/old/build/benchmarks/bench_suite
new=/work/main/build/release/benchmarks/bench_suite
for round in 1 2 3 4 5 6; do
  for cell in tai dynet; do
    for which in old new; do
      bin=$old; [[ $which == new ]] && bin=$new
      SYLVA_DATA=/work/shared/data taskset -c 0 $bin --workload tree-lstm --cell $cell --strategies sylva --batch ${B:-1} \
        --threads 1 --hidden ${H:-128} --embed ${H:-128} --optimizer adam --repeats 3 --min-time 1 2>/dev/null |
        awk -v r=$round -v w=$which -v c=$cell '$3 == "train" {print "round", r, w, c, $0}'
    done
  done
done
