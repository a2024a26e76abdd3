#!/usr/bin/env bash
# Configures and builds rlf (Release) into build/ (RLF_BUILD_DIR), every target
# or just RLF_BUILD_TARGET. Extra arguments go to CMake (e.g.
# -DRLF_ORACLE_PYTHON=..., -DRLF_SANITIZE=ON); compiles through ccache when
# it is installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${RLF_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"
# ccache (when installed) keeps compiled objects across builds and clones:
# paths are hashed relative to the clone, so a fresh clone at another path
# reuses what an earlier one compiled. The settings travel in the compiler
# launcher itself, so a later `cmake --build build` (without this script)
# hashes the same way and fills the cache for the next clone.
# RLF_CCACHE=0 builds without it.
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER= -DCMAKE_CUDA_COMPILER_LAUNCHER=)  # (clears one an earlier configure cached)
if [ "${RLF_CCACHE:-1}" = 1 ] && command -v ccache > /dev/null; then
  sloppiness="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
  # (-fmacro-prefix-map=<this clone>/= maps every clone's paths to the same
  # text: left out of the hash, whose preprocessed text then matches)
  ccache_cmd="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;CCACHE_SLOPPINESS=$sloppiness;CCACHE_IGNOREOPTIONS=-fmacro-prefix-map=*;ccache"
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=$ccache_cmd" "-DCMAKE_CUDA_COMPILER_LAUNCHER=$ccache_cmd")
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" ${RLF_BUILD_TARGET:+--target "$RLF_BUILD_TARGET"}
