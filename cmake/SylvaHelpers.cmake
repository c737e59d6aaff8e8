# Compile options shared by every Sylva target.
add_library(sylva_options INTERFACE)
target_compile_options(sylva_options INTERFACE
  $<BUILD_INTERFACE:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-psabi>
  $<$<BOOL:${SYLVA_WERROR}>:$<BUILD_INTERFACE:-Werror>>)
# GCC 12 reports -Wrestrict inside libstdc++'s std::string operator+ at -O2/-O3
# (GCC bug 105329, a false positive fixed in GCC 13); -Werror builds would fail.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(sylva_options INTERFACE $<BUILD_INTERFACE:-Wno-restrict>)
endif()
if(SYLVA_NATIVE_ARCH)
  target_compile_options(sylva_options INTERFACE $<BUILD_INTERFACE:-march=native>)
endif()
# std::sqrt and friends need not set errno (nothing reads it): without this
# GCC keeps a scalar call path for negative inputs and cannot vectorise a
# loop with a square root (the optimiser updates). Results are unchanged:
# only errno is, which no Sylva code inspects.
target_compile_options(sylva_options INTERFACE $<BUILD_INTERFACE:-fno-math-errno>)
if(SYLVA_SANITIZE)
  string(REPLACE ";" "," _san "${SYLVA_SANITIZE}")
  target_compile_options(sylva_options INTERFACE -fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(sylva_options INTERFACE -fsanitize=${_san})
endif()
# Exported as Sylva::options. Modules link it PRIVATE, so consumers only see
# its link options (the sanitizer runtimes in SYLVA_SANITIZE builds); the
# warning and -march flags are BUILD_INTERFACE and never leave this build.
set_target_properties(sylva_options PROPERTIES EXPORT_NAME options)
install(TARGETS sylva_options EXPORT SylvaTargets)

set(SYLVA_MODULES "" CACHE INTERNAL "")

# sylva_program(<target>...): the examples, tools, baselines and benchmark
# drivers: compiled at SYLVA_PROGRAM_OPT (CMakeLists.txt) with the
# precompiled header made once for sylva_cli (tools/cli/CMakeLists.txt),
# instead of each parsing CLI11 and the public API again. The targets must
# be compiled with sylva_cli's flags (sylva_options, no extra -D or -f
# options); otherwise GCC warns (-Winvalid-pch, an error with -Werror).
# The tests have their own (tests/CMakeLists.txt).
function(sylva_program)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE ${SYLVA_PROGRAM_OPT})
    if(NOT target STREQUAL "sylva_cli")
      target_precompile_headers(${target} REUSE_FROM sylva_cli)
    endif()
  endforeach()
endfunction()

# sylva_add_module(<name> SOURCES ... DEPS ...): one static library per
# module (shared with SYLVA_SHARED_MODULES); dependencies are PRIVATE so the
# dependency direction stays explicit.
function(sylva_add_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;EXTERNAL" ${ARGN})
  if(SYLVA_SHARED_MODULES)
    add_library(sylva_${name} SHARED ${M_SOURCES})
  else()
    add_library(sylva_${name} STATIC ${M_SOURCES})
  endif()
  target_include_directories(sylva_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(sylva_${name} PRIVATE sylva_options ${M_EXTERNAL})
  foreach(dep IN LISTS M_DEPS)
    target_link_libraries(sylva_${name} PRIVATE sylva_${dep})
  endforeach()
  set_target_properties(sylva_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})
  set(SYLVA_MODULES ${SYLVA_MODULES} sylva_${name} CACHE INTERNAL "")
endfunction()
