# rlf_library(NAME SOURCES ... DEPS ...): a static library rooted at the project
# root for includes ("model/config.h").
function(rlf_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# rlf_test(NAME SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s] [COST s] [CPU_HEAVY]): a GoogleTest executable whose
# tests are registered with CTest. Every test is in one of two tiers, both run
# by scripts/test.sh: "e2e" (LABELS e2e: whole runs, the rlf binary) or the
# fast tier (everything else: unit and oracle tests, label "fast", or
# "parser" for the ones also run under ASan + UBSan). Tests find shared/, the oracle interpreter
# and the build tree through defaults compiled into rlf_test_support
# (tests/CMakeLists.txt), which the environment may override. CPU_HEAVY tests
# (whole training runs that keep every core busy) share one resource lock, so
# ctest -j never runs two of them at once: side by side on 2 cores their
# BLAS/OpenMP threads spin against each other and each takes 2-4x as long.
function(rlf_test name)
  cmake_parse_arguments(ARG "CPU_HEAVY" "TIMEOUT;COST" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # Developers working on one part while others edit theirs may configure with
  # -DRLF_DEV_SKIP_INCOMPLETE_TESTS=ON: test targets with missing sources are
  # skipped with a warning. Never set in scripts/test.sh or CI.
  if(RLF_DEV_SKIP_INCOMPLETE_TESTS)
    foreach(src ${ARG_SOURCES})
      if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${src})
        message(WARNING "skipping test target ${name}: ${src} does not exist yet")
        return()
      endif()
    endforeach()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  # Test code is not what gets measured: -O1 (after the build type's -O3)
  # compiles it ~20% faster and still reuses the shared PCH (-O0 would not).
  target_compile_options(${name} PRIVATE -O1)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} rlf_test_support GTest::gtest GTest::gtest_main)
  # One label per test (the properties travel as KEY=VALUE pairs).
  list(LENGTH ARG_LABELS n_labels)
  if(n_labels GREATER 1)
    message(FATAL_ERROR "rlf_test(${name}): one label at most (got ${ARG_LABELS})")
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS fast)
  endif()
  if(ARG_LABELS STREQUAL "parser")
    set_property(GLOBAL APPEND PROPERTY RLF_PARSER_TESTS ${name})
  endif()
  # One CTest test per GoogleTest suite (cmake/rlf_gtest_suites.cmake says
  # why), listed when the executable is linked; TIMEOUT is per test.
  set(pairs "TIMEOUT=${ARG_TIMEOUT}|LABELS=${ARG_LABELS}")
  if(ARG_CPU_HEAVY)
    string(APPEND pairs "|RESOURCE_LOCK=cpu_heavy")
  endif()
  if(ARG_COST)  # expected seconds: ctest -j starts the costliest tests first
    string(APPEND pairs "|COST=${ARG_COST}")
  endif()
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_suites.cmake")
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-DEXE=$<TARGET_FILE:${name}>" "-DOUT=${suites_file}" "-DNAME=${name}"
            "-DPROPS=${pairs}" "-DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}"
            -P "${PROJECT_SOURCE_DIR}/cmake/rlf_gtest_suites.cmake"
    BYPRODUCTS "${suites_file}" VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_include.cmake")
  file(WRITE "${include_file}"
       "if(EXISTS [==[${suites_file}]==])\n  include([==[${suites_file}]==])\n"
       "else()\n  add_test([==[${name}_NOT_BUILT]==] [==[${name}_NOT_BUILT]==])\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

# rlf_use_torch_pch(): every library and executable that links rlf_torch,
# directly or through other targets, reuses the one precompiled <torch/torch.h>
# of rlf_torch_pch instead of building its own. Called once, after every
# target is defined.
function(_rlf_links_torch target out)
  set(${out} FALSE PARENT_SCOPE)
  get_property(seen GLOBAL PROPERTY _RLF_TORCH_SEEN_${target} SET)
  if(seen)
    get_property(v GLOBAL PROPERTY _RLF_TORCH_SEEN_${target})
    set(${out} ${v} PARENT_SCOPE)
    return()
  endif()
  set(result FALSE)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  else()
    get_target_property(libs ${target} LINK_LIBRARIES)
  endif()
  if(libs)
    foreach(lib ${libs})
      if(lib STREQUAL "rlf_torch")
        set(result TRUE)
      elseif(TARGET ${lib} AND NOT lib MATCHES "::")
        _rlf_links_torch(${lib} sub)
        if(sub)
          set(result TRUE)
        endif()
      endif()
      if(result)
        break()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY _RLF_TORCH_SEEN_${target} ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(_rlf_collect_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _rlf_collect_targets(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(rlf_use_torch_pch)
  _rlf_collect_targets(${PROJECT_SOURCE_DIR} targets)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(t STREQUAL "rlf_torch_pch" OR NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$")
      continue()
    endif()
    _rlf_links_torch(${t} uses)
    if(uses)
      target_precompile_headers(${t} REUSE_FROM rlf_torch_pch)
    endif()
  endforeach()
endfunction()
