#!/usr/bin/env bash
# Sylva's full check (what .ci/run executes):
#   1. release: Release + -Werror, everything (library, tests, examples,
#      benchmarks, and the CUDA backend where /usr/local/cuda has CUDA 13)
#      in build/release; ctest without the `slow` label.
#   2. asan:    -O1 -g1 + AddressSanitizer/UndefinedBehaviorSanitizer,
#      library, tests and examples in build/asan (the example models have
#      tests of their own; benchmarks are left out to keep the build short);
#      no -Werror here: GCC 12 reports false -Wuninitialized inside
#      avx512fintrin.h under the sanitizers. Same ctest selection.
#      SYLVA_SKIP_ASAN=1 skips this stage.
# Exits non-zero if any build or test fails; the last line is a summary.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

bash scripts/install_deps.sh || { echo "run_tests: FAILED (dependency installation)"; exit 1; }

jobs=$(nproc)
ctest_args=(--output-on-failure -LE slow -j2 --timeout 600)

# Configures build dir $1 with Ninja and the remaining arguments; a build
# dir left by another generator is started afresh.
configure() {
  local dir=$1
  shift
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    echo "run_tests: $dir was configured with another generator; removing it"
    rm -rf "$dir"
  fi
  cmake -S . -B "$dir" -G Ninja "$@"
}

declare -a summary=()
status=0

# stage <name> <dir> <cmake args...>: configure, build, test. Returns 2 when
# the build failed, 1 when tests failed.
stage() {
  local name=$1 dir=$2
  shift 2
  local t0=$SECONDS
  echo "==== run_tests: stage $name ($dir) ===="
  if ! configure "$dir" "$@" || ! cmake --build "$dir" -j"$jobs"; then
    summary+=("$name: BUILD FAILED")
    return 2
  fi
  if ! ctest --test-dir "$dir" "${ctest_args[@]}"; then
    summary+=("$name: TESTS FAILED ($((SECONDS - t0)) s)")
    return 1
  fi
  summary+=("$name: ok ($((SECONDS - t0)) s)")
}

# The CUDA backend is built in the release stage wherever CUDA 13 sits in
# /usr/local/cuda (no GPU needed: NVRTC and the host logic are tested, GPU
# tests skip with their reason; scripts/device_check.sh runs them on a GPU).
cuda_flag=-DSYLVA_BUILD_CUDA=OFF
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_flag=-DSYLVA_BUILD_CUDA=ON
else
  echo "run_tests: no CUDA toolkit in /usr/local/cuda; building without the CUDA backend"
fi
# gold (binutils ships it beside ld.bfd) links the hundred-odd test, example
# and tool binaries about a third faster, which the ASan stage feels most.
link_flags=()
if command -v ld.gold > /dev/null; then
  link_flags=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=gold -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=gold)
fi
stage release build/release -DCMAKE_BUILD_TYPE=Release -DSYLVA_WERROR=ON "$cuda_flag" "${link_flags[@]}"
release_rc=$?
[[ $release_rc -ne 0 ]] && status=1

if [[ ${SYLVA_SKIP_ASAN:-0} != 0 ]]; then
  summary+=("asan: skipped (SYLVA_SKIP_ASAN=1)")
elif [[ $release_rc -eq 2 ]]; then
  summary+=("asan: skipped (release build failed)")
else
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # -O1: the sanitizer build is compile-bound; -O1 compiles much faster than -O2 and the tests stay quick.
  # -g1: line tables only, enough for the sanitizers' stack traces; a third less compile time than -g and
  # half the object size (checkpoint_test.cc: 17 s vs 25 s).
  stage asan build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    "-DSYLVA_SANITIZE=address;undefined" -DSYLVA_BUILD_EXAMPLES=ON -DSYLVA_BUILD_BENCHMARKS=OFF \
    -DSYLVA_BUILD_CUDA=OFF "${link_flags[@]}" || status=1
fi

# ThreadSanitizer on the concurrency-heavy tests (streaming, the lanes of
# the CNN runner, the hybrid CoSA search, the invariance suite that runs
# every policy with streaming). Opt-in (SYLVA_TSAN=1): its build alone
# takes about ten minutes on 2 cores, which the 20-minute budget of the
# default run does not have. OMP_NUM_THREADS=1: libgomp is not
# instrumented, so oneDNN's OpenMP workers would report false races.
tsan_tests=(test_runtime_stream_test test_sched_cosa_search_test test_graph_cnn_streams_test
            test_runtime_invariance_test)
if [[ ${SYLVA_TSAN:-0} != 0 ]]; then
  t0=$SECONDS
  echo "==== run_tests: stage tsan (build/tsan) ===="
  if configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
       -DSYLVA_SANITIZE=thread -DSYLVA_BUILD_EXAMPLES=OFF -DSYLVA_BUILD_BENCHMARKS=OFF -DSYLVA_BUILD_CUDA=OFF \
       "${link_flags[@]}" && cmake --build build/tsan -j"$jobs" --target "${tsan_tests[@]}"; then
    tsan_ok=1
    for t in "${tsan_tests[@]}"; do
      OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "build/tsan/tests/$t" || tsan_ok=0
    done
    if [[ $tsan_ok -eq 1 ]]; then summary+=("tsan: ok ($((SECONDS - t0)) s)"); else summary+=("tsan: FAILED"); status=1; fi
  else
    summary+=("tsan: BUILD FAILED")
    status=1
  fi
else
  summary+=("tsan: not run (SYLVA_TSAN=1 runs it)")
fi

echo "==== run_tests summary ===="
if [[ $status -eq 0 ]]; then verdict=PASSED; else verdict=FAILED; fi
(IFS=';'; echo "run_tests: $verdict in ${SECONDS} s [${summary[*]}]")
exit $status
