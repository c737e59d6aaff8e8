#!/usr/bin/env bash
# Sylva's GPU check, run from the bundle scripts/device_bundle.sh builds
# (it is that bundle's check.sh): needs nothing but the bundle, bash,
# coreutils, tar or python3, and the GPU's driver and CUDA libraries. In
# order, each step under its own timeout and the whole under DEADLINE
# seconds (default 330; steps that do not fit are reported, not run):
#  1. unpack the payload beside this script (once); find CUDA's libraries
#     (the toolkit under /usr/local/cuda, else the nvidia-* Python wheels'
#     site-packages/nvidia/*/lib) and say which were used;
#  2. the GPU tests (tests/cuda, and the op harness, invariance and
#     device data-parallel suites with SYLVA_TEST_DEVICE=cuda: the last is
#     NCCL at world size 1 against the plain GPU run), with SYLVA_CUDA_SYNC=1;
#  3. without a GPU: stop with a clear "no GPU" status (exit 2);
#  4. bench_cuda (cuBLAS, fused gates); bench_suite on the GPU, whole
#     training steps (forward, backward, Sylva's SGD on the device, a
#     device synchronisation before the clock stops), Sylva against the
#     dynamic-declaration baselines (Tree-LSTM on SST at d 300, h 150
#     against autobatch and unbatched; Fixed-LSTM on PTB with cuDNN's LSTM
#     running the same step beside it; IOS on SqueezeNet and Inception-v3;
#     CoSA's kernels against cuDNN; Tree-FC; Var-LSTM);
#  5. a summary table.
# Writes at most 8 files to $OUT (default <bundle>/out): env.txt,
# tests.txt, bench_cuda.txt, suite.txt, lstm_cudnn.txt, ios.txt,
# cosa_gpu.txt, summary.txt. Exit 0 only if every step passed on a GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/out}
DEADLINE=${DEADLINE:-330}
REPEATS=${REPEATS:-3}
MIN_TIME=${MIN_TIME:-0.5}
mkdir -p "$OUT"
t0=$SECONDS
work=$here/unpacked
if [[ ! -f $work/.done ]]; then
  rm -rf "$work" && mkdir -p "$work"
  tar -xJf "$here/payload.tar.xz" -C "$work" 2> /dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/payload.tar.xz" "$work" ||
    { echo "check: cannot unpack $here/payload.tar.xz (no tar with xz, no python3)"; exit 1; }
  touch "$work/.done"
fi
bin=$work/bin
export SYLVA_DATA=$work/data

# CUDA's libraries: the toolkit's first, then the wheels' (cuDNN and NCCL are often only there).
cuda_dirs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d $d ]] && cuda_dirs+=("$d")
done
wheels=$(python3 -c 'import glob, os, nvidia
for p in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(p, "*", "lib"))): print(d)' 2> /dev/null || true)
while read -r d; do [[ -n $d ]] && cuda_dirs+=("$d"); done <<< "$wheels"
path=$work/lib
for d in "${cuda_dirs[@]}"; do path+=":$d"; done
export LD_LIBRARY_PATH=$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  echo "# bundle: $(head -1 "$here/MANIFEST" 2> /dev/null)"
  echo "# GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -3)"
  echo "# glibc here: $(getconf GNU_LIBC_VERSION 2>&1); the bundle $(grep "needs glibc" "$here/MANIFEST" 2> /dev/null)"
  echo "# CUDA library search path after the bundle's: ${cuda_dirs[*]:-none}"
  echo "# what each binary loads (ldd):"
  for b in "$bin"/*; do ldd "$b" | awk -v b="$(basename "$b")" '{ print b ": " $0 }'; done
  # cuBLAS, NVRTC and NCCL are dlopen()ed (src/backend/cuda/vendor_libs.cc),
  # so ldd does not show them: where the same search finds them.
  for lib in libcublas.so.13 libnvrtc.so.13 libnccl.so.2; do
    found="not found"
    for d in "${cuda_dirs[@]}"; do [[ -e $d/$lib ]] && { found=$d/$lib; break; }; done
    echo "dlopen: $lib => $found"
  done
} > "$OUT/env.txt" 2>&1
missing=$(grep -c "=> not found" "$OUT/env.txt" || true)
echo "check: CUDA libraries used:"
grep -hoE "(libcudart|libcublas|libcublasLt|libcudnn|libnvrtc|libnccl)\.so[.0-9]* => [^ ]+" "$OUT/env.txt" | sort -u |
  sed 's/^/  /'
((missing == 0)) || { echo "check: $missing libraries not found (see env.txt):"; grep "=> not found" "$OUT/env.txt" | sort -u; }

left() { echo $((DEADLINE - (SECONDS - t0))); }
# step <seconds> <file> <command...>: runs it under min(seconds, time left), appending to the file.
declare -A rc_of
step() {
  local limit=$1 file=$2 name=$3
  shift 3
  local budget
  budget=$(left)
  ((budget < limit)) && limit=$budget
  if ((limit < 10)); then
    echo "check: $name not run: the ${DEADLINE} s deadline" | tee -a "$OUT/$file"
    rc_of[$name]=deadline
    return
  fi
  echo "== $name (limit ${limit} s)" >> "$OUT/$file"
  timeout "$limit" "$@" >> "$OUT/$file" 2>&1
  rc_of[$name]=$?
  echo "check: $name rc ${rc_of[$name]} ($((SECONDS - t0)) s)"
}

: > "$OUT/tests.txt"
for t in "$bin"/test_cuda_*; do
  step 90 tests.txt "$(basename "$t")" env SYLVA_CUDA_SYNC=1 "$t" --gtest_brief=1
done
for t in test_ir_op_harness_test test_runtime_invariance_test test_train_device_parallel_test; do
  step 90 tests.txt "$t@cuda" env SYLVA_CUDA_SYNC=1 SYLVA_TEST_DEVICE=cuda "$bin/$t" --gtest_brief=1
done
# Per test binary: passed, skipped and failed tests ("set-up skip": the suite skipped as a whole, no GPU).
per_binary=$(awk '
  function flush() { if (name != "") printf "  %-32s %4d passed %4d skipped %4d failed%s\n", name, p, k, f, (setup ? "  (set-up skip: no GPU to run on)" : "") }
  /^== / { flush(); name = $2; p = k = f = setup = 0; next }
  /^\[  PASSED  \] [0-9]+ tests?\./ { p = $4 }
  /^\[  SKIPPED \] [0-9]+ tests?\./ { k = $4 }
  /^\[  FAILED  \] [A-Za-z]/ { f++ }
  /no GPU to run on/ { setup = 1 }
  END { flush() }' "$OUT/tests.txt")
read -r passed skipped failed <<< "$(awk '{ p += $2; k += $4; f += $6; if ($0 ~ /set-up skip/) { k += $2; p -= $2 } }
  END { print p + 0, k + 0, f + 0 }' <<< "$per_binary")"
tests_line="GPU tests: $passed passed, $skipped skipped, $failed failed
$per_binary"
no_gpu=$(grep -m1 -oE "no CUDA device[^\"]*|no GPU to run on[^\"]*" "$OUT/tests.txt" || true)
if [[ -n $no_gpu ]] && ! nvidia-smi > /dev/null 2>&1; then
  {
    echo "==== check summary ($((SECONDS - t0)) s) ===="
    for k in "${!rc_of[@]}"; do echo "$k: rc ${rc_of[$k]}"; done | sort
    echo "$tests_line"
    echo "NO GPU: $no_gpu. The GPU tests ran and skipped; no benchmark was run."
  } | tee "$OUT/summary.txt"
  ((failed == 0)) || exit 1  # host-side tests (NVRTC, plans) failed even without a GPU
  exit 2
fi

step 40 bench_cuda.txt bench_cuda "$bin/bench_cuda" --rows 64,256,1024,4096 --repeats 20
suite() {  # suite <seconds> <name> <bench_suite args...>
  local limit=$1 name=$2
  shift 2
  step "$limit" suite.txt "$name" "$bin/bench_suite" --device cuda --repeats "$REPEATS" --min-time "$MIN_TIME" \
    --optimizer sgd --lr 0.05 --csv "$work/$name.csv" "$@"
}
pair=sylva,dynamic-decl-autobatch
suite 90 tree_lstm --data "$SYLVA_DATA" --workload tree-lstm --strategies $pair,dynamic-decl --batch 25,64,256 \
  --embed 300 --hidden 150
suite 60 fixed_lstm --data "$SYLVA_DATA" --workload fixed-lstm --strategies sylva --batch 16,64 --hidden 200 \
  --max-samples 4096
step 40 lstm_cudnn.txt bench_cudnn_lstm "$bin/bench_cudnn_lstm" --batch 16,64 --hidden 200 --vocab 10000 --steps 64 \
  --repeats 20
step 50 ios.txt ios_b1 "$bin/bench_ios" --data "$SYLVA_DATA" --cost profile --device cuda --batch 1 \
  --graphs "squeezenet;inception_v3" --pruning 3,8 --repeats 10
# Budgets 1x and 10x only: the stem's 2 s solve makes a 100x hybrid search 200 s.
step 90 cosa_gpu.txt cosa_gpu "$bin/bench_cosa_gpu" \
  --layers "$SYLVA_DATA/cosa/workloads/resnet50/unique_layers.yaml" --limit 6 --budgets 1,10 --correlate 1 \
  --mappings 30 --reps 10
suite 60 tree_fc --workload tree-fc --strategies $pair --batch 16,64,256 --leaves 128 --hidden 128,512 --trees 256
suite 60 var_lstm --data "$SYLVA_DATA" --workload var-lstm --strategies $pair --batch 16,64 --hidden 200,512 \
  --max-samples 4096

{
  echo "==== check summary ($((SECONDS - t0)) s, deadline ${DEADLINE} s) ===="
  for k in "${!rc_of[@]}"; do echo "$k: rc ${rc_of[$k]}"; done | sort
  echo "$tests_line (a skip on a GPU machine means the GPU was not usable)"
  grep -E "^(gemm|fused)" "$OUT/bench_cuda.txt" 2> /dev/null
  echo
  echo "Sylva vs the dynamic-declaration baselines, all on the GPU (training steps with SGD on the device;"
  echo "units/s medians; x autobatch = sylva / dynamic-decl-autobatch, x unbatched = sylva / dynamic-decl)"
  printf "%-11s %6s %6s %6s %12s %12s %12s %11s %11s\n" workload batch hidden leaves sylva autobatch unbatched \
    "x autobatch" "x unbatched"
  cat "$work"/tree_lstm.csv "$work"/tree_fc.csv "$work"/var_lstm.csv 2> /dev/null | awk -F, '
    $1 == "workload" { next }
    { key = $1 FS $4 FS $5 FS $6; v[$2, key] = $12; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
    function cell(x) { return x > 0 ? sprintf("%12.1f", x) : sprintf("%12s", "-") }
    function ratio(a, b) { return b > 0 ? sprintf("%10.2fx", a / b) : sprintf("%11s", "-") }
    END { for (i = 0; i < n; i++) { k = order[i]; split(k, f, FS);
            s = v["sylva", k]; a = v["dynamic-decl-autobatch", k]; u = v["dynamic-decl", k];
            printf "%-11s %6s %6s %6s %s %s %s %s %s\n", f[1], f[2], f[3], f[4], cell(s), cell(a), cell(u),
              ratio(s, a), ratio(s, u) } }'
  if [[ -f $work/fixed_lstm.csv ]]; then
    echo
    echo "Fixed-LSTM training, words/s medians (ratio = cuDNN / Sylva)"
    printf "%-6s %14s %14s %8s\n" batch sylva cudnn ratio
    awk -F, 'NR == FNR { if ($2 == "sylva") s[$4] = $12; next }
             { printf "%-6s %14.0f %14.0f %7.2fx\n", $1, s[$1], $2, (s[$1] > 0 ? $2 / s[$1] : 0) }' \
      "$work/fixed_lstm.csv" <(awk '$1 ~ /^[0-9]+$/ { print $1 "," $2 }' "$OUT/lstm_cudnn.txt")
  fi
  echo
  echo "IOS on the GPU (cuDNN), batch 1: whole-network latency in ms, median of 10; vs seq = sequential / plan"
  grep -E "^(squeezenet|inception)" "$OUT/ios.txt" 2> /dev/null |
    awk '{ printf "%-14s %-13s %5s %9s ms %8s\n", $1, $2, $3, $4, $7 }'
  echo
  echo "CoSA's kernels on the GPU:"
  grep -E "geomean|solve time|Spearman" "$OUT/cosa_gpu.txt" 2> /dev/null
} | tee "$OUT/summary.txt"
ok=1
for k in "${!rc_of[@]}"; do [[ ${rc_of[$k]} == 0 ]] || ok=0; done
((ok && skipped == 0 && failed == 0 && missing == 0))
