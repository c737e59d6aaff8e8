cmake_minimum_required(VERSION 3.20)
# Checks DESIGN.md §3's dependency direction: a file of module M may only
# include sylva/<D>/ headers of modules D that M may depend on.
# Usage: cmake -DROOT=<source dir> -P check_layering.cmake
set(allowed_core "core")
set(allowed_ir "core;ir")
set(allowed_frontend "core;ir;frontend")
set(allowed_passes "core;ir;passes")
set(allowed_sched "core;ir;sched")
set(allowed_backend "core;ir;backend")
set(allowed_graph "core;ir;sched;backend;graph")
# plan: the plan as a value (F, ∂F, phases, fusion); it never reaches into
# the runtime that executes it, nor into a backend.
set(allowed_plan "core;ir;passes;sched;plan")
# runtime: runs plans; deriving programs (passes) is the plan's. Still
# above frontend (the Executor takes a Program and a ParameterSet) and
# sched (ExecutorOptions carries ios::Options): docs/architecture.md says why.
set(allowed_runtime "core;ir;frontend;sched;plan;backend;runtime")
set(allowed_dist "core;backend;dist")
set(allowed_train "core;ir;frontend;passes;sched;plan;backend;runtime;dist;train")
set(errors "")
foreach(module core ir frontend passes sched plan backend graph runtime dist train)
  file(GLOB_RECURSE files ${ROOT}/include/sylva/${module}/*.h ${ROOT}/src/${module}/*.h ${ROOT}/src/${module}/*.cc)
  foreach(f IN LISTS files)
    file(STRINGS ${f} lines REGEX "#include \"sylva/[a-z_]+/")
    foreach(line IN LISTS lines)
      string(REGEX MATCH "sylva/([a-z_]+)/" _ "${line}")
      set(dep ${CMAKE_MATCH_1})
      if(NOT dep IN_LIST allowed_${module})
        string(APPEND errors "${f}: module '${module}' includes sylva/${dep}/ (allowed: ${allowed_${module}})\n")
      endif()
    endforeach()
  endforeach()
endforeach()
# The optional wing (SYLVA_BUILD_COSA): CoSA (sylva/sched/cosa*.h) and the
# static CNN path (sylva/graph/) are included by nothing the dynamic-network
# library builds on: not by the IOS files of sched, nor by plan, runtime,
# dist or train.
file(GLOB_RECURSE core_files ${ROOT}/include/sylva/sched/ios*.h ${ROOT}/src/sched/ios*.cc
     ${ROOT}/include/sylva/plan/*.h ${ROOT}/src/plan/*.cc ${ROOT}/include/sylva/runtime/*.h ${ROOT}/src/runtime/*.h
     ${ROOT}/src/runtime/*.cc ${ROOT}/include/sylva/dist/*.h ${ROOT}/src/dist/*.cc ${ROOT}/include/sylva/train/*.h
     ${ROOT}/src/train/*.h ${ROOT}/src/train/*.cc)
foreach(f IN LISTS core_files)
  file(STRINGS ${f} lines REGEX "#include \"sylva/(sched/cosa|graph/)")
  if(lines)
    string(APPEND errors "${f}: includes the optional CoSA wing (${lines}); only sched/cosa*, graph/ and tools may\n")
  endif()
endforeach()
# STYLE.md: kernels/ (device code) includes nothing outside kernels/ --
# only its own headers ("name.h") and system or CUDA headers (<...>).
file(GLOB_RECURSE kernel_files ${ROOT}/kernels/*.cu ${ROOT}/kernels/*.cuh ${ROOT}/kernels/*.h)
foreach(f IN LISTS kernel_files)
  file(STRINGS ${f} lines REGEX "#include \"")
  get_filename_component(dir ${f} DIRECTORY)
  foreach(line IN LISTS lines)
    string(REGEX MATCH "#include \"([^\"]+)\"" _ "${line}")
    set(included ${CMAKE_MATCH_1})
    get_filename_component(target "${dir}/${included}" ABSOLUTE)
    if(NOT target MATCHES "^${ROOT}/kernels/" OR NOT EXISTS ${target})
      string(APPEND errors "${f}: device code includes \"${included}\", which is not in kernels/\n")
    endif()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "Layering violations:\n${errors}")
endif()
message(STATUS "layering ok")
