# ctest driver for bench_cosa_kernels on a tiny fixture written here:
#   cmake -DBENCH=<path to bench_cosa_kernels> -DWORK_DIR=<scratch dir> -P test_bench_cosa_kernels.cmake
# Two small layers (one strided): every method's kernel is checked against
# the reference inside the driver (a wrong kernel exits non-zero; CoSA's
# also on channels-last data), the
# correlation runs on one layer, the CSV has a row per layer; then two
# small GEMMs (--gemm) against oneDNN's sgemm.
include(${CMAKE_CURRENT_LIST_DIR}/cosa_bench_fixture.cmake)
execute_process(COMMAND "${BENCH}" --layers "${WORK_DIR}/net/layers.yaml" --reps 1 --correlate 1 --mappings 5
                        --budgets 1,10 --csv "${WORK_DIR}/out.csv"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_cosa_kernels: exit ${rc}\n${out}\n${err}")
endif()
foreach(want "2 layers; geomean of search time / CoSA time" "CoSA time / oneDNN time"
             "CoSA on channels-last data / oneDNN (no copies in either)" "CoSA solve time per layer")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bench_cosa_kernels: no '${want}' in\n${out}")
  endif()
endforeach()
file(STRINGS "${WORK_DIR}/out.csv" rows)
list(LENGTH rows n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "bench_cosa_kernels: ${n} CSV lines, wanted a header and 2 rows:\n${rows}")
endif()
list(GET rows 0 header)
if(NOT header MATCHES "^layer,macs,cosa_solve_s,cosa_ms,random5_ms,random_1x_ms,random_10x_ms,hybrid_10x_ms,onednn_ms")
  message(FATAL_ERROR "bench_cosa_kernels: unexpected CSV header ${header}")
endif()
execute_process(COMMAND "${BENCH}" --gemm 4x40x12,1x17x9 --reps 1 --correlate 1 --mappings 5 --budgets 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_cosa_kernels --gemm: exit ${rc}\n${out}\n${err}")
endif()
foreach(want "gemm_4x40x12 " "gemm_1x17x9 " "2 layers; geomean of search time / CoSA time" "CoSA time / oneDNN sgemm time")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bench_cosa_kernels --gemm: no '${want}' in\n${out}")
  endif()
endforeach()
