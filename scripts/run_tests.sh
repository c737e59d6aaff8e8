#!/usr/bin/env bash
# Sylva's full check (what .ci/run executes):
#   1. release: Release + -Werror, everything (library, tests, examples,
#      benchmarks, the Python package and its pytest suite, and the CUDA
#      backend where /usr/local/cuda has CUDA 13)
#      in build/release; ctest without the `slow` label.
#   2. asan:    -O1 -g1 (tests and programs -O0) + AddressSanitizer/UndefinedBehaviorSanitizer,
#      library, tests and examples in build/asan (the example models have
#      tests of their own; benchmarks are left out to keep the build short);
#      no -Werror here: GCC 12 reports false -Wuninitialized inside
#      avx512fintrin.h under the sanitizers. The library's modules are
#      shared libraries here (SYLVA_SHARED_MODULES): linked statically,
#      each of the ~90 test and example binaries carried its own
#      instrumented copy of the library, 4.4 GB in all (now 1.5 GB for the
#      whole build tree). Same ctest selection.
#      SYLVA_SKIP_ASAN=1 skips this stage.
#   3. tsan:   ThreadSanitizer on the threaded tests (below).
#   4. nocosa: -DSYLVA_BUILD_COSA=OFF (no CoSA, no static CNN path, no CBC
#      or yaml-cpp): the dynamic-network library, its examples and tests,
#      built for compile time (unity, tests -O0) in build/nocosa; same
#      ctest selection. SYLVA_SKIP_NOCOSA=1 skips it.
# Exits non-zero if any build or test fails; the last line is a summary.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# --python: the Python package's build and test modules in build/pyvenv (PyPI).
bash scripts/install_deps.sh --python || { echo "run_tests: FAILED (dependency installation)"; exit 1; }
# The Python package (nanobind) is built and its pytest suite run (ctest
# python_tests) in the release and ASan stages.
python_flags=(-DSYLVA_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$PWD/build/pyvenv/bin/python")

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

# The three stages need about 3 GB of disk together (the ASan stage's
# build tree 1.5 GB of it). A full disk shows up as a compiler's
# "No space left on device" deep in the log: say so up front.
free_kb() { df -Pk . | awk 'NR == 2 { print $4 }'; }
disk_note() {
  local kb
  kb=$(free_kb)
  if [[ -n $kb && $kb -lt 1048576 ]]; then
    echo "run_tests: only $((kb / 1024)) MB free on $(df -P . | awk 'NR == 2 { print $6 }'); the stages need about 3 GB"
  fi
}
disk_note

# stage <name> <dir> <cmake args...>: configure, build, test. Returns 2 when
# the build failed, 1 when tests failed.
stage() {
  local name=$1 dir=$2
  shift 2
  local t0=$SECONDS
  echo "==== run_tests: stage $name ($dir) ===="
  if ! configure "$dir" "$@" || ! cmake --build "$dir" -j"$jobs"; then
    disk_note
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
# The sanitizer stages build for compile time, since instrumented code
# compiles 2-3x as slowly (ios_graph.cc at -O1: 16 s plain, 49 s with
# ASan+UBSan):
#  - the tests and programs at -O0 (the library at -O1): instrumented code at
#    -O1 compiles twice as slowly (checkpoint_test.cc: 37 s vs 18 s), and the
#    work the tests do is the library's;
#  - unity builds (8 files per unit): the library's headers and templates
#    are compiled once per unit rather than per file, 30% less CPU for the
#    library. Unity can make internal names clash (a compile error here)
#    or, in principle, let one file's call see another file's internal
#    overload; the release stage builds file by file, as users do, and runs
#    the same tests.
sanitizer_code_opt=(-DSYLVA_TEST_OPT=-O0 -DSYLVA_PROGRAM_OPT=-O0 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
stage release build/release -DCMAKE_BUILD_TYPE=Release -DSYLVA_WERROR=ON "$cuda_flag" "${link_flags[@]}" "${python_flags[@]}"
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
    "-DSYLVA_SANITIZE=address;undefined" -DSYLVA_BUILD_EXAMPLES=ON -DSYLVA_BUILD_BENCHMARKS=OFF "${sanitizer_code_opt[@]}" \
    -DSYLVA_BUILD_CUDA=OFF -DSYLVA_SHARED_MODULES=ON "${link_flags[@]}" "${python_flags[@]}" || status=1
fi

# 3. tsan: ThreadSanitizer on the tests that run Sylva's own threads: the
#    device streams (stream_test; the invariance suite, the op harness and
#    the bf16 precision suite on the simulated device, whose two lanes run
#    out of step), the lanes of
#    the CNN runner (IOS's concurrent stages), the hybrid CoSA search, and
#    the invariance suite's every policy with streaming. Only these tests and
#    the library are built (-O1 -g1, as the ASan stage), which keeps the
#    stage to a few minutes. OMP_NUM_THREADS=1: libgomp is not instrumented,
#    so oneDNN's and the optimiser's OpenMP workers would report false races
#    (TSan cannot see their barriers); the OpenMP loops themselves are
#    checked by the invariance tests' threads = 1 vs 2 comparisons instead.
#    A planted race (tests/support/tsan_canary.cc) runs first and must be
#    reported, so the stage cannot pass by not checking.
#    SYLVA_SKIP_TSAN=1 skips this stage.
tsan_runs=("test_runtime_stream_test" "test_sched_cosa_search_test" "test_graph_cnn_streams_test"
           "test_runtime_invariance_test" "test_runtime_invariance_test SYLVA_TEST_DEVICE=sim-late-main"
           "test_ir_op_harness_test SYLVA_TEST_DEVICE=sim-late-main"
           "test_runtime_precision_test SYLVA_TEST_DEVICE=sim-late-main")
tsan_targets=(tsan_canary test_runtime_stream_test test_sched_cosa_search_test test_graph_cnn_streams_test
              test_runtime_invariance_test test_ir_op_harness_test test_runtime_precision_test)
if [[ ${SYLVA_SKIP_TSAN:-0} != 0 ]]; then
  summary+=("tsan: skipped (SYLVA_SKIP_TSAN=1)")
elif [[ $release_rc -eq 2 ]]; then
  summary+=("tsan: skipped (release build failed)")
else
  t0=$SECONDS
  echo "==== run_tests: stage tsan (build/tsan) ===="
  if configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
       -DSYLVA_SANITIZE=thread -DSYLVA_BUILD_EXAMPLES=OFF -DSYLVA_BUILD_BENCHMARKS=OFF -DSYLVA_BUILD_CUDA=OFF "${sanitizer_code_opt[@]}" \
       "${link_flags[@]}" && cmake --build build/tsan -j"$jobs" --target "${tsan_targets[@]}"; then
    tsan_ok=1
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
    if OMP_NUM_THREADS=1 build/tsan/tests/tsan_canary > build/tsan/canary.log 2>&1 ||
       ! grep -q 'ThreadSanitizer: data race' build/tsan/canary.log; then
      echo "run_tests: the planted race in tsan_canary was not reported; ThreadSanitizer is not checking"
      cat build/tsan/canary.log
      tsan_ok=0
    fi
    for run in "${tsan_runs[@]}"; do
      read -r test env_setting <<< "$run"
      echo "---- tsan: $test ${env_setting:-}"
      # shellcheck disable=SC2086  # env_setting is one NAME=value word or empty
      env OMP_NUM_THREADS=1 SYLVA_TEST_SOURCE_DIR="$PWD" ${env_setting:-} "build/tsan/tests/$test" --gtest_brief=1 || tsan_ok=0
    done
    if [[ $tsan_ok -eq 1 ]]; then
      summary+=("tsan: ok ($((SECONDS - t0)) s)")
    else
      summary+=("tsan: FAILED ($((SECONDS - t0)) s)")
      status=1
    fi
  else
    summary+=("tsan: BUILD FAILED")
    status=1
  fi
fi

# 4. nocosa: the library without the optional CoSA wing must build and pass on its own.
if [[ ${SYLVA_SKIP_NOCOSA:-0} != 0 ]]; then
  summary+=("nocosa: skipped (SYLVA_SKIP_NOCOSA=1)")
elif [[ $release_rc -eq 2 ]]; then
  summary+=("nocosa: skipped (release build failed)")
else
  stage nocosa build/nocosa -DCMAKE_BUILD_TYPE=Release -DSYLVA_WERROR=ON -DSYLVA_BUILD_COSA=OFF \
    -DSYLVA_BUILD_BENCHMARKS=OFF -DSYLVA_BUILD_CUDA=OFF "${sanitizer_code_opt[@]}" "${link_flags[@]}" || status=1
fi

echo "==== run_tests summary ===="
if [[ $status -eq 0 ]]; then verdict=PASSED; else verdict=FAILED; fi
(IFS=';'; echo "run_tests: $verdict in ${SECONDS} s [${summary[*]}]")
exit $status
