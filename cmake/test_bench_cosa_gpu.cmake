# ctest driver for bench_cosa_gpu on a tiny fixture written here:
#   cmake -DBENCH=<path to bench_cosa_gpu> -DWORK_DIR=<scratch dir> -P test_bench_cosa_gpu.cmake
# With a GPU: two small layers (one strided), every kernel checked against
# the reference inside the driver, the table's summary lines and a CSV row
# per layer. Without one: exit 1 with the "no GPU" line and nothing else
# wrong.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/net")
file(WRITE "${WORK_DIR}/net/a.yaml" "problem:\n  R: 3\n  S: 3\n  P: 6\n  Q: 6\n  C: 8\n  K: 32\n  N: 1\n")
file(WRITE "${WORK_DIR}/net/b.yaml"
     "problem:\n  R: 1\n  S: 1\n  P: 5\n  Q: 5\n  C: 16\n  K: 48\n  N: 1\n  Wstride: 2\n  Hstride: 2\n")
file(WRITE "${WORK_DIR}/net/layers.yaml" "- a\n- b\n")
execute_process(COMMAND "${BENCH}" --layers "${WORK_DIR}/net/layers.yaml" --reps 2 --correlate 1 --mappings 5
                        --budgets 1,10 --csv "${WORK_DIR}/out.csv"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 1 AND err MATCHES "^error: no GPU: no CUDA device visible \\([^)]*\\); this benchmark needs one\n$")
  message(STATUS "bench_cosa_gpu: no GPU here, as it says: ${err}")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_cosa_gpu: exit ${rc}\n${out}\n${err}")
endif()
foreach(want "2 layers; geomean of search time / CoSA time" "CoSA time / cuDNN time" "CoSA solve time per layer"
        "Spearman(predicted, measured) over 5 random mappings on 1 layers")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bench_cosa_gpu: no '${want}' in\n${out}")
  endif()
endforeach()
file(STRINGS "${WORK_DIR}/out.csv" rows)
list(LENGTH rows n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "bench_cosa_gpu: ${n} CSV lines, wanted a header and 2 rows:\n${rows}")
endif()
