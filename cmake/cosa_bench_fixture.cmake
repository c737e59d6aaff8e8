# The two-layer network the CoSA kernel benchmarks' smoke tests run on
# (included by test_bench_cosa_kernels.cmake and test_bench_cosa_gpu.cmake):
# ${WORK_DIR}/net/layers.yaml with a 3x3 layer and a strided 1x1 layer.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/net")
file(WRITE "${WORK_DIR}/net/a.yaml" "problem:\n  R: 3\n  S: 3\n  P: 6\n  Q: 6\n  C: 8\n  K: 32\n  N: 1\n")
file(WRITE "${WORK_DIR}/net/b.yaml"
     "problem:\n  R: 1\n  S: 1\n  P: 5\n  Q: 5\n  C: 16\n  K: 48\n  N: 1\n  Wstride: 2\n  Hstride: 2\n")
file(WRITE "${WORK_DIR}/net/layers.yaml" "- a\n- b\n")
