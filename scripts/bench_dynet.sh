#!/usr/bin/env bash
# Sylva against the real DyNet on the CPU, side by side in one interleaved
# run per configuration (docs/benchmarks.md, "Against the real DyNet"). Builds DyNet
# from ../shared/peers (about 10 minutes on 2 cores, once) and the release
# tree with the dynet strategies, then runs bench_suite:
#   - one core: the whole process pinned with taskset to one core (so Sylva
#     starts no streaming worker), every strategy --threads 1;
#   - two cores (TWO_CORES=1): Sylva with --threads 2 on two cores, with
#     OMP_WAIT_POLICY=active (SYLVA_OMP_WAIT_POLICY overrides; "default"
#     leaves it unset): libgomp's idle GEMM thread otherwise goes to sleep
#     between the small GEMMs of a step and waking it costs more than the
#     GEMM (docs/notes/two-cores.md, "Two cores and the OpenMP wait policy");
#     DyNet's CPU build uses one core whatever it is given. bench_suite
#     records the cross-core round trip before and after each two-core
#     configuration (on a VM it can switch between states that halve a
#     two-thread run at batch 1: docs/notes/two-cores.md, "The second core:
#     where the VM puts it"); table.md prints it after each two-core rate.
# Training steps are timed whole (forward, backward and each system's own
# optimiser update) by a wall clock. Tree-FC also runs bench_suite's
# gemm-floor (Sylva's GEMMs alone plus its optimiser step, a bound).
#
#   bash scripts/bench_dynet.sh [results-dir]      (default build/bench-dynet)
#
# Environment: WORKLOADS (default "tree-lstm"; also var-lstm, fixed-lstm,
# tree-fc), CELLS ("tai dynet"), HIDDENS ("128 512"), BATCHES ("1,16,64,256"),
# LSTM_SIZES ("128:256:1 200:200:2", embed:hidden:layers), LSTM_BATCHES and
# TREE_FC_BATCHES ("1,16,64"),
# OPTIMIZERS ("adam": each of adam, adagrad, sgd runs the whole matrix), LR (0.001), REPEATS (3), MIN_TIME (1.0 s per repeat),
# SYLVA_BUILD (the build tree, build/release), DYNET_BUILD (/tmp/dynet-build), DYNET_MEM (MB of DyNet pools, 4096),
# TWO_CORES (0), QUICK=1 (h 128, batches 1 and 16, short repeats),
# MEMORY=1: instead of the throughput matrix (and from a tree built
# without libtorch, build/bench-memory or SYLVA_MEMORY_BUILD), peak resident memory at each
# hidden size and MEMORY_BATCH (64), each system alone in its own process
# and running every minibatch of an epoch once (so both meet the largest):
# Sylva, and DyNet autobatch at the smallest pool (--dynet-mem, searched to
# 4 MB) that completes the run (a smaller one aborts under autobatching),
# with what DyNet's four pools reserved in all (the flag split in four, the
# parameter pool grown to hold Adam's moments and the gradients); and, like
# for like, the MB each held for activations and their gradients (Sylva:
# Executor::held_bytes; DyNet: its forward, backward and scratch pools in
# use after a step, the largest step's).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-build/bench-dynet}
wait_policy=()
case ${SYLVA_OMP_WAIT_POLICY:-active} in
  default) wait_policy=(-u OMP_WAIT_POLICY) ;;
  *) wait_policy=("OMP_WAIT_POLICY=${SYLVA_OMP_WAIT_POLICY:-active}") ;;
esac
mkdir -p "$out"
peers=$(cd .. && pwd)/shared/peers
dynet_build=${DYNET_BUILD:-/tmp/dynet-build}
if [[ ! -f $dynet_build/dynet/libdynet.so ]]; then
  [[ -f $peers/build_dynet.sh ]] || { echo "bench_dynet: no $peers/build_dynet.sh (the DyNet peer)" >&2; exit 1; }
  bash "$peers/build_dynet.sh" "$dynet_build"
fi
bash scripts/install_deps.sh
build=${SYLVA_BUILD:-build/release}
memory_flags=()
if [[ ${MEMORY:-0} != 0 ]]; then
  # Peak resident memory: a tree without libtorch, whose libraries alone
  # would add about 140 MB to every process (Sylva's and DyNet's alike).
  build=${SYLVA_MEMORY_BUILD:-build/bench-memory}
  memory_flags=(-DSYLVA_BENCH_LIBTORCH=OFF -DSYLVA_BUILD_TESTS=OFF -DSYLVA_BUILD_PYTHON=OFF)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_DYNET_DIR="$dynet_build" "${memory_flags[@]}" \
  > /dev/null
cmake --build "$build" --target bench_suite
suite=$build/benchmarks/bench_suite

workloads=${WORKLOADS:-tree-lstm}
cells=${CELLS:-tai dynet}
hiddens=${HIDDENS:-128 512}
batches=${BATCHES:-1,16,64,256}
repeats=${REPEATS:-3}
min_time=${MIN_TIME:-1.0}
if [[ ${QUICK:-0} != 0 ]]; then
  hiddens=128; batches=1,16; repeats=3; min_time=0.3
fi
common=(--lr "${LR:-0.001}" --repeats "$repeats" --min-time "$min_time" --dynet-mem "${DYNET_MEM:-4096}")

{
  echo "# bench_dynet $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
  echo "# cores: $(nproc), memory: $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "# git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
} | tee "$out/machine.txt"

# "values-MB peak-RSS-MB pools-MB" of one bench_suite run of strategy $1
# over a whole epoch, with extra args (values: what the strategy held for
# activations and their gradients; pools: what DyNet's pools reserved, -1
# for Sylva); empty if it failed.
memory_of() {
  local s=$1 opts=${OPTIMIZERS:-adam} csv
  shift
  csv=$(mktemp)
  # (The group's redirection also silences the shell's "Aborted" when DyNet's pool is too small.)
  if { taskset -c 0 "$suite" --workload tree-lstm --strategies "$s" --batch "${MEMORY_BATCH:-64}" --threads 1 \
    --optimizer "${opts%% *}" --repeats 1 --min-time 0 --whole-epoch --lr "${LR:-0.001}" --csv "$csv" "$@" \
    > /dev/null; } 2> /dev/null; then
    awk -F, 'NR == 1 {for (i = 1; i <= NF; ++i) col[$i] = i; next}
      {printf "%.0f %.0f %.0f\n", $col["values_mb"], $col["peak_rss_mb"], $col["pools_mb"]}' "$csv"
  fi
  rm -f "$csv"
}
# Whether DyNet-autobatch completes the epoch with a pool of $1 MB (cell
# $cell, h $h); if so, done_at is memory_of's line for it.
probe() {
  local r
  r=$(memory_of dynet-autobatch --cell "$cell" --hidden "$h" --embed "$h" --dynet-mem "$1")
  echo "bench_dynet: memory, $cell cell, h $h: --dynet-mem $1 $([[ -n $r ]] && echo completes || echo aborts)" >&2
  [[ -n $r ]] && done_at=$r
}
if [[ ${MEMORY:-0} != 0 ]]; then
  for cell in $cells; do
    for h in $hiddens; do
      echo "bench_dynet: memory, $cell cell, h $h: sylva over an epoch" >&2
      read -r sylva_values sylva _ < <(memory_of sylva --cell "$cell" --hidden "$h" --embed "$h")
      # DyNet's pool: doubled until a run completes, then bisected to 4 MB.
      lo=16 hi=16
      until probe "$hi"; do lo=$hi hi=$((hi * 2)); done
      while ((hi - lo > 4)); do
        mid=$(((lo + hi) / 2))
        if probe "$mid"; then hi=$mid; else lo=$mid; fi
      done
      read -r dynet_values dynet dynet_pools <<< "$done_at"
      echo "memory: tree-lstm cell $cell h $h batch ${MEMORY_BATCH:-64}: sylva peak RSS $sylva MB, values $sylva_values MB;" \
        "dynet-autobatch smallest pool $hi MB (> $lo fails), its pools reserved $dynet_pools MB in all, peak RSS $dynet MB," \
        "values (forward, backward and scratch pools) $dynet_values MB" | tee -a "$out/memory.txt"
      # The same as a row of memory.csv, which scripts/bench_report.py reads.
      [[ -f $out/memory.csv ]] || echo "workload,cell,hidden,batch,sylva_peak_rss_mb,sylva_values_mb,dynet_smallest_pool_mb,$(
        )dynet_failing_pool_mb,dynet_pools_reserved_mb,dynet_peak_rss_mb,dynet_values_mb" > "$out/memory.csv"
      echo "tree-lstm,$cell,$h,${MEMORY_BATCH:-64},$sylva,$sylva_values,$hi,$lo,$dynet_pools,$dynet,$dynet_values" >> "$out/memory.csv"
    done
  done
  exit 0
fi

for opt in ${OPTIMIZERS:-adam}; do
for w in $workloads; do
  case $w in
    tree-lstm)
      for h in $hiddens; do
        # The Tree-LSTM's word vectors are as wide as its memory (the DyNet benchmarks' setting).
        sizes=(--hidden "$h" --embed "$h")
        for cell in $cells; do
          taskset -c 0 "$suite" --workload "$w" --cell "$cell" --strategies sylva,dynet-autobatch,dynet \
            --batch "$batches" --threads 1 "${sizes[@]}" --optimizer "$opt" "${common[@]}" --sweep "one-core" \
            --csv "$out/$w-$cell-h$h-$opt-1core.csv"
          if [[ ${TWO_CORES:-0} != 0 ]]; then
            env "${wait_policy[@]}" taskset -c 0,1 "$suite" --workload "$w" --cell "$cell" --strategies sylva \
              --batch "$batches" --threads 2 \
              "${sizes[@]}" --optimizer "$opt" "${common[@]}" --sweep "two-core" --csv "$out/$w-$cell-h$h-$opt-2core.csv"
          fi
        done
      done
      ;;
    var-lstm|fixed-lstm)
      # embed:hidden:layers (the issue's two language models).
      for lm in ${LSTM_SIZES:-128:256:1 200:200:2}; do
        IFS=: read -r e h l <<< "$lm"
        taskset -c 0 "$suite" --workload "$w" --strategies sylva,dynamic-decl-autobatch,dynet-autobatch \
          --batch "${LSTM_BATCHES:-1,16,64}" --threads 1 --embed "$e" --hidden "$h" --layers "$l" \
          --optimizer "$opt" "${common[@]}" --sweep "one-core" --csv "$out/$w-e$e-h$h-l$l-$opt-1core.csv"
      done
      ;;
    tree-fc)
      taskset -c 0 "$suite" --workload "$w" --strategies sylva,dynamic-decl-autobatch,dynet-autobatch,gemm-floor \
        --batch "${TREE_FC_BATCHES:-1,16,64}" --threads 1 --optimizer "$opt" "${common[@]}" --sweep "one-core" \
        --csv "$out/$w-$opt-1core.csv"
      ;;
    *) echo "bench_dynet: unknown workload $w" >&2; exit 1 ;;
  esac
done
done
echo "bench_dynet: results in $out"
