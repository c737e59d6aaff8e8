#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU (CUDA 13 in
# /usr/local/cuda). In order, each step bounded by a timeout:
#  1. configure and build with the CUDA backend (the targets below only);
#  2. the `cuda` test label: the CUDA kernels against the CPU backend, the
#     executor training on CUDA, and the op harness and invariance suites on
#     CUDA (SYLVA_TEST_DEVICE=cuda);
#  3. microbenchmarks: cuBLAS GEMM and NVRTC-fused LSTM gates (bench_cuda);
#  4. the workloads on the GPU with bench_suite --device cuda, Sylva against
#     the dynamic-declaration autobatch baseline on the same GPU: Tree-LSTM
#     (SST) and Tree-FC (generated trees) across batch (and, for Tree-FC,
#     hidden) sizes, Var-LSTM (PTB)
#     at two hidden sizes; Fixed-LSTM (PTB) against cuDNN's LSTM
#     (bench_cudnn_lstm, same sizes: hidden = embedding 200, 10k words,
#     64-token chains);
#  5. IOS on the GPU: bench_ios --cost profile --device cuda on SqueezeNet
#     and Inception-v3 at batch 1 and 16 (cuDNN convolutions and pooling,
#     concurrent groups on their own streams, merged convolutions),
#     sequential against the IOS plans;
# and prints a compact table last. Sized for about 7 minutes on one H200.
# Env: BUILD (default build/device), OUT (default $BUILD/device_check),
# SYLVA_DATA (holding sst/ and ptb/; without it the SST and PTB workloads are
# skipped with a note), REPEATS (bench_suite repeats, default 3), MIN_TIME
# (seconds per repeat, default 0.5).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/device}
OUT=${OUT:-$BUILD/device_check}
REPEATS=${REPEATS:-3}
MIN_TIME=${MIN_TIME:-0.5}
t0=$SECONDS
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_BUILD_CUDA=ON -DSYLVA_BUILD_EXAMPLES=ON \
  -DSYLVA_BUILD_BENCHMARKS=ON > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
targets=(bench_cuda bench_cudnn_lstm bench_suite bench_ios test_ir_op_harness_test test_runtime_invariance_test)
for t in tests/cuda/*_test.cc; do targets+=("test_cuda_$(basename "$t" .cc)"); done
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "device_check: built in $((SECONDS - t0)) s"

data=${SYLVA_DATA:-}
[[ -z $data && -d ../shared/data ]] && data=$(cd ../shared/data && pwd)
[[ -z $data && -d shared/data ]] && data=$(cd shared/data && pwd)
[[ -n $data ]] && export SYLVA_DATA=$data  # the GPU tests on real graphs read it too

timeout 240 ctest --test-dir "$BUILD" -L cuda --output-on-failure 2>&1 | tee "$OUT/ctest.txt"
tests_rc=${PIPESTATUS[0]}
skipped=$(grep -c "Skipped" "$OUT/ctest.txt" || true)

timeout 60 "$BUILD"/benchmarks/bench_cuda --rows 64,256,1024,4096 --repeats 20 | tee "$OUT/bench_cuda.txt"
micro_rc=${PIPESTATUS[0]}

suite() {  # suite <name> <bench_suite args...>: one CSV per call, rc recorded
  local name=$1
  shift
  timeout 150 "$BUILD"/benchmarks/bench_suite --device cuda --repeats "$REPEATS" --min-time "$MIN_TIME" \
    --csv "$OUT/$name.csv" "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  [[ $rc -eq 0 ]] || { echo "device_check: $name failed (rc $rc)"; bench_failed+=("$name"); }
}
bench_failed=()
pair=sylva,dynamic-decl-autobatch
suite tree_fc --workload tree-fc --strategies $pair --batch 16,64,256 --leaves 128 --hidden 128,512 --trees 256
if [[ -n $data && -d $data/sst && -d $data/ptb ]]; then
  suite tree_lstm --data "$data" --workload tree-lstm --strategies $pair --batch 1,16,64,256 --hidden 150
  suite var_lstm --data "$data" --workload var-lstm --strategies $pair --batch 16,64 --hidden 200,512 \
    --max-samples 4096
  suite fixed_lstm --data "$data" --workload fixed-lstm --strategies sylva --batch 16,64 --hidden 200 \
    --max-samples 4096
  timeout 120 "$BUILD"/benchmarks/bench_cudnn_lstm --batch 16,64 --hidden 200 --vocab 10000 --steps 64 \
    --repeats 20 | tee "$OUT/cudnn_lstm.txt"
  cudnn_rc=${PIPESTATUS[0]}
else
  echo "device_check: no SST/PTB data (set SYLVA_DATA): Tree-LSTM, Var-LSTM and Fixed-LSTM not measured"
  bench_failed+=(no-data)
  cudnn_rc=0
fi
ios_rc=0
if [[ -n $data && -d $data/ios/graphs ]]; then
  for b in 1 16; do
    timeout 90 "$BUILD"/benchmarks/bench_ios --data "$data" --cost profile --device cuda --batch "$b" \
      --graphs "squeezenet;inception_v3" --pruning 3,8 --repeats 10 | tee "$OUT/ios_b$b.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || ios_rc=1
  done
else
  echo "device_check: no IOS graphs (set SYLVA_DATA): IOS on the GPU not measured"
  bench_failed+=(no-ios-data)
fi

echo
echo "==== device_check summary ($((SECONDS - t0)) s) ===="
grep -E "tests passed|tests failed" "$OUT/ctest.txt"
echo "cuda tests: rc $tests_rc, $skipped skipped (a skip on a GPU machine means the GPU was not usable)"
echo "bench_cuda: rc $micro_rc; bench_cudnn_lstm: rc $cudnn_rc; bench_ios: rc $ios_rc;" \
  "bench_suite failures: ${bench_failed[*]:-none}"
grep -E "^(gemm|fused)" "$OUT/bench_cuda.txt"
echo
echo "Sylva vs dynamic-declaration autobatch, both on the GPU (training; units/s medians, ratio = sylva / baseline)"
printf "%-11s %6s %6s %6s %14s %14s %8s\n" workload batch hidden leaves sylva baseline ratio
cat "$OUT"/tree_fc.csv "$OUT"/tree_lstm.csv "$OUT"/var_lstm.csv 2>/dev/null | awk -F, '
  $1 == "workload" { next }
  { key = $1 FS $4 FS $5 FS $6; if ($2 == "sylva") s[key] = $12; else b[key] = $12; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
  END { for (i = 0; i < n; i++) { k = order[i]; split(k, f, FS);
          printf "%-11s %6s %6s %6s %14.1f %14.1f %7.2fx\n", f[1], f[2], f[3], f[4], s[k], b[k], (b[k] > 0 ? s[k] / b[k] : 0) } }'
if [[ -f $OUT/fixed_lstm.csv && -f $OUT/cudnn_lstm.txt ]]; then
  echo
  echo "Fixed-LSTM training, words/s medians (ratio = cuDNN / Sylva: the target is <= 1.5x)"
  printf "%-6s %14s %14s %8s\n" batch sylva cudnn ratio
  awk -F, 'NR == FNR { if ($2 == "sylva") s[$4] = $12; next }
           { printf "%-6s %14.0f %14.0f %7.2fx\n", $1, s[$1], $2, (s[$1] > 0 ? $2 / s[$1] : 0) }' \
    "$OUT/fixed_lstm.csv" <(awk '$1 ~ /^[0-9]+$/ { print $1 "," $2 }' "$OUT/cudnn_lstm.txt")
fi
if ls "$OUT"/ios_b*.txt > /dev/null 2>&1; then
  echo
  echo "IOS on the GPU (cuDNN): whole-network latency in ms, median of 10; vs seq = sequential / plan"
  for f in "$OUT"/ios_b*.txt; do
    echo "# batch ${f##*_b}" | sed 's/.txt$//'
    grep -E "^(squeezenet|inception)" "$f" | awk '{ printf "%-14s %-13s %5s %9s ms %8s\n", $1, $2, $3, $4, $7 }'
  done
fi
[[ $tests_rc -eq 0 && $micro_rc -eq 0 && $cudnn_rc -eq 0 && $ios_rc -eq 0 && $skipped -eq 0 &&
  ${#bench_failed[@]} -eq 0 ]]
