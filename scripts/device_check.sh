#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU (CUDA 13 in
# /usr/local/cuda): configure and build with the CUDA backend, run the
# `cuda` test label (GPU tests compare every CUDA kernel with the CPU
# backend), then the GPU microbenchmarks and the cuDNN LSTM reference of the
# Fixed-LSTM workload, and print a compact table last.
# Sized for a few minutes on one H200. Env: BUILD (default build/device),
# ROWS (default 64,256,1024,4096), REPEATS (default 20).
#
# Not here yet, because the runtime does not keep its tensors on the device
# (docs/architecture.md, "CUDA"): Sylva's Tree-LSTM, Var-LSTM, Fixed-LSTM
# and Tree-FC training on the GPU (so the cuDNN numbers have no Sylva row
# to compare with yet).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/device}
OUT=${OUT:-$BUILD/device_check}
t0=$SECONDS
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_BUILD_CUDA=ON -DSYLVA_BUILD_EXAMPLES=ON \
  -DSYLVA_BUILD_BENCHMARKS=ON > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
targets=(bench_cuda bench_cudnn_lstm)
for t in tests/cuda/*_test.cc; do targets+=("test_cuda_$(basename "$t" .cc)"); done
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "device_check: built in $((SECONDS - t0)) s"
ctest --test-dir "$BUILD" -L cuda --output-on-failure 2>&1 | tee "$OUT/ctest.txt"
tests_rc=${PIPESTATUS[0]}
skipped=$(grep -c "Skipped" "$OUT/ctest.txt" || true)
"$BUILD"/benchmarks/bench_cuda --rows "${ROWS:-64,256,1024,4096}" --repeats "${REPEATS:-20}" | tee "$OUT/bench_cuda.txt"
bench_rc=${PIPESTATUS[0]}
"$BUILD"/benchmarks/bench_cudnn_lstm --batch 16,64 --repeats "${REPEATS:-20}" | tee "$OUT/cudnn_lstm.txt"
cudnn_rc=${PIPESTATUS[0]}
echo
echo "==== device_check summary ($((SECONDS - t0)) s) ===="
grep -E "tests passed|tests failed" "$OUT/ctest.txt"
echo "cuda tests: rc $tests_rc, $skipped skipped (a skip on a GPU machine means the GPU was not usable)"
echo "bench_cuda: rc $bench_rc; bench_cudnn_lstm: rc $cudnn_rc"
cat "$OUT/bench_cuda.txt" "$OUT/cudnn_lstm.txt"
echo "not measured (runtime not on the device yet): Sylva's Tree-LSTM, Var-LSTM, Fixed-LSTM and Tree-FC on the GPU"
[[ $tests_rc -eq 0 && $bench_rc -eq 0 && $cudnn_rc -eq 0 && $skipped -eq 0 ]]
