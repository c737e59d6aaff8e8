# ctest driver for the sylva-cosa CLI on a tiny fixture written here:
#   cmake -DCOSA=<path to sylva-cosa> -DWORK_DIR=<scratch dir> -P test_sylva_cosa.cmake
# schedule -> evaluate the written mapping -> random and hybrid search ->
# batch with a CSV table, and a missing file as a clear error.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/net")
file(WRITE "${WORK_DIR}/arch.yaml" "arch:
  arithmetic:
    instances: 4
  storage:
  - name: Reg
    entries: 1
    instances: 4
  - name: Buf
    entries: 64
    instances: 1
  - name: DRAM
    technology: DRAM
    instances: 1
    bandwidth: 2
")
file(WRITE "${WORK_DIR}/mapspace.yaml" "mapspace:
  constraints:
  - target: Reg
    type: datatype
    keep: [Weights]
    bypass: [Inputs, Outputs]
  - target: Buf
    type: datatype
    keep: [Inputs, Outputs]
    bypass: [Weights]
")
file(WRITE "${WORK_DIR}/net/a.yaml" "problem:\n  R: 3\n  S: 1\n  P: 4\n  Q: 1\n  C: 2\n  K: 4\n  N: 1\n")
file(WRITE "${WORK_DIR}/net/b.yaml" "problem:\n  R: 1\n  S: 1\n  P: 13\n  Q: 1\n  C: 4\n  K: 2\n  N: 1\n")
file(WRITE "${WORK_DIR}/net/layers.yaml" "- a\n- b\n")

function(run expect_rc pattern)
  execute_process(COMMAND "${COSA}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "sylva-cosa ${ARGN}: exit ${rc}, wanted ${expect_rc}\n${out}\n${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "sylva-cosa ${ARGN}: output lacks '${pattern}'\n${out}\n${err}")
  endif()
  message(STATUS "sylva-cosa ${ARGN}: ok")
endfunction()

set(common --arch "${WORK_DIR}/arch.yaml" --mapspace "${WORK_DIR}/mapspace.yaml")
run(0 "a: valid, [0-9]+ cycles" schedule ${common} --problem "${WORK_DIR}/net/a.yaml" -o "${WORK_DIR}/map.yaml")
run(0 "measured: median [0-9.]+ ms over 5 runs.*max error [0-9.e+-]+ of the largest output\nmodel: [0-9]+ cycles"
    schedule --arch cpu --problem "${WORK_DIR}/net/a.yaml" --run)
run(0 "gemm_8x40x12: valid.*measured: median [0-9.]+ ms over 5 runs.*max error [0-9.e+-]+ of the largest output"
    schedule --arch cpu --gemm 8x40x12 --run)
run(0 "name: L1" arch)
run(0 "name: SharedMemory" arch --gpu)
run(0 "a: valid, [0-9]+ cycles" schedule --arch gpu --problem "${WORK_DIR}/net/a.yaml")
run(0 "gpu conv 'gemm_8x16x12': [0-9]+ blocks x [0-9]+ threads.*register tile"
    schedule --arch gpu --gemm 8x16x12 --emit-cuda "${WORK_DIR}/k.cu")
file(READ "${WORK_DIR}/k.cu" kernel)
if(NOT kernel MATCHES "extern \"C\" __global__ void __launch_bounds__\\([0-9]+\\) sylva_cosa_conv_f32_")
  message(FATAL_ERROR "--emit-cuda wrote no kernel entry point:\n${kernel}")
endif()
run(1 "--emit-cuda needs --arch gpu \\(got --arch cpu\\)" schedule --arch cpu --gemm 8x16x12 --emit-cuda "${WORK_DIR}/k2.cu")
run(0 "a: valid" evaluate ${common} --problem "${WORK_DIR}/net/a.yaml" --mapping "${WORK_DIR}/map.yaml")
run(0 "random search: [0-9]+ mappings drawn, 5 valid" search --algo random ${common} --problem "${WORK_DIR}/net/a.yaml")
run(0 "hybrid search: .*a: valid" search --algo hybrid --seconds 0.2 ${common} --problem "${WORK_DIR}/net/a.yaml")
run(0 "b padded \\(P=13 -> primes <= 7\\)" schedule ${common} --problem "${WORK_DIR}/net/b.yaml" --pad 7)
run(0 "2 layers on arch.*hybrid 0.2 s +cycles" batch ${common} --layers "${WORK_DIR}/net/layers.yaml" --best-of 20
    --hybrid-seconds 0.2 --csv "${WORK_DIR}/table.csv")
file(STRINGS "${WORK_DIR}/table.csv" rows)
list(LENGTH rows n)
if(NOT n EQUAL 9)
  message(FATAL_ERROR "table.csv has ${n} lines, wanted a header and 2 layers x 4 methods")
endif()
run(1 "--mapping: File does not exist: .*missing.yaml" evaluate ${common} --problem "${WORK_DIR}/net/a.yaml" --mapping
    "${WORK_DIR}/missing.yaml")
