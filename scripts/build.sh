#!/usr/bin/env bash
# Configures and builds rlf (Release) into build/ (RLF_BUILD_DIR), every target
# or just RLF_BUILD_TARGET. Extra arguments go to CMake (e.g.
# -DRLF_ORACLE_PYTHON=..., -DRLF_SANITIZE=ON).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${RLF_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" ${RLF_BUILD_TARGET:+--target "$RLF_BUILD_TARGET"}
