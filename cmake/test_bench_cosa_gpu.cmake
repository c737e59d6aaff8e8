# ctest driver for bench_cosa_gpu on a tiny fixture written here:
#   cmake -DBENCH=<path to bench_cosa_gpu> -DWORK_DIR=<scratch dir> -P test_bench_cosa_gpu.cmake
# With a GPU: two small layers (one strided), every kernel checked against
# the reference inside the driver, the table's summary lines and a CSV row
# per layer. Without one: exit 1 with the "no GPU" line and nothing else
# wrong.
include(${CMAKE_CURRENT_LIST_DIR}/cosa_bench_fixture.cmake)
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
