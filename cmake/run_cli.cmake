# ctest driver: runs one command line and checks its exit status and what
# it printed (PASS_REGULAR_EXPRESSION alone would pass a crash that printed
# the right words):
#   cmake -DCMD="<exe>|<arg>|<arg>..." -DEXPECT_RC=<status>|nonzero [-DMATCH=<regex>]
#         [-DONE_LINE_ERROR=ON] [-DMAX_SECONDS=<s>] -P run_cli.cmake
# MATCH is searched in stdout and stderr together; ONE_LINE_ERROR also
# requires stderr to be exactly one line that MATCH finds. EXPECT_RC=nonzero
# accepts any failing exit status (not a timeout); MAX_SECONDS fails a
# command that took longer (whole seconds) and stops it 5 s after that.
string(REPLACE "|" ";" cmd "${CMD}")
set(limit 600)
if(DEFINED MAX_SECONDS)
  math(EXPR limit "${MAX_SECONDS} + 5")
endif()
string(TIMESTAMP started "%s")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${limit})
string(TIMESTAMP finished "%s")
math(EXPR took "${finished} - ${started}")
set(shown "command: ${CMD}\nexit status: ${rc} after ${took} s\nstdout (last 2000 chars): ")
string(LENGTH "${out}" n)
if(n GREATER 2000)
  math(EXPR from "${n} - 2000")
  string(SUBSTRING "${out}" ${from} 2000 out_tail)
else()
  set(out_tail "${out}")
endif()
string(APPEND shown "${out_tail}\nstderr: ${err}")
if(EXPECT_RC STREQUAL "nonzero")
  if(NOT rc MATCHES "^[0-9]+$" OR rc EQUAL 0)
    message(FATAL_ERROR "expected a failing exit status\n${shown}")
  endif()
elseif(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit status ${EXPECT_RC}\n${shown}")
endif()
if(DEFINED MAX_SECONDS AND took GREATER MAX_SECONDS)
  message(FATAL_ERROR "took ${took} s, more than ${MAX_SECONDS} s\n${shown}")
endif()
if(DEFINED MATCH AND NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output lacks /${MATCH}/\n${shown}")
endif()
if(ONE_LINE_ERROR)
  string(REGEX REPLACE "\n$" "" line "${err}")
  if(line MATCHES "\n" OR NOT line MATCHES "${MATCH}")
    message(FATAL_ERROR "stderr should be one line matching /${MATCH}/\n${shown}")
  endif()
endif()
