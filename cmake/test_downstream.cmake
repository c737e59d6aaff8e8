# Installs a built Sylva tree into a scratch prefix, then configures, builds
# and runs examples/cmake_project against it (find_package(Sylva CONFIG)).
# Run by the `downstream` CTest test:
#   cmake -DSOURCE_DIR=<src> -DBUILD_DIR=<build> -DWORK_DIR=<scratch>
#         -DCONFIG=<build type> -DGENERATOR=<generator> -DCXX=<compiler>
#         [-DCXX_FLAGS=<flags>] [-DSANITIZE=<address;undefined|thread>]
#         -P test_downstream.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE_DIR BUILD_DIR WORK_DIR CONFIG GENERATOR CXX)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "test_downstream.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "downstream: ${step} failed (exit ${rc}):\n${ARGN}\n${out}")
  endif()
  message(STATUS "downstream: ${step} ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})

run(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})

# A sanitized Sylva exports -fsanitize as a link option already; compiling the
# consumer with the same sanitizers too makes its own code checked as well.
set(flags "${CXX_FLAGS}")
if(SANITIZE)
  string(REPLACE ";" "," san "${SANITIZE}")
  string(APPEND flags " -fsanitize=${san} -fno-omit-frame-pointer -fno-sanitize-recover=all")
endif()

run(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cmake_project -B ${consumer} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${CONFIG} -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${flags}"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON)
run(build ${CMAKE_COMMAND} --build ${consumer} --config ${CONFIG})

find_program(exe consumer PATHS ${consumer} ${consumer}/${CONFIG} NO_DEFAULT_PATH REQUIRED)
run(run ${exe})
message(STATUS "downstream: ${last_output}")
