#!/usr/bin/env bash
# llama.cpp for the GGUF check (tests/model/test_gguf.cpp, GgufLlamaCpp.*) and
# the single-stream peer of the speed benchmarks: llama-cpp-python from PyPI,
# which compiles llama.cpp from source (about 10–20 minutes on 2 cores; pip
# caches the wheel afterwards), into its own virtual environment.
#
#   bash bench/setup_llama_cpp.sh [VENV]          # default .venv-llama-cpp
#   RLF_LLAMA_CPP_PYTHON=.venv-llama-cpp/bin/python build/tests/model/test_model --gtest_filter='GgufLlamaCpp.*'
#
# Not part of scripts/test.sh: the compile would run on every clean CI
# checkout. GGML_NATIVE=ON builds for this CPU (AVX2/AVX-512 where present);
# --no-binary/--no-cache-dir: never a wheel pip cached on another CPU (a peer
# benchmarked at its best is compiled for the machine it runs on). About 3
# minutes on the 2-core Sapphire Rapids machine (2026-11-26).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv-llama-cpp}"
version="${RLF_LLAMA_CPP_VERSION:-0.3.16}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$version')" 2>/dev/null; then
  echo "setup_llama_cpp: building llama-cpp-python $version into $venv"
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF}" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-binary llama-cpp-python \
      "llama-cpp-python==$version"
fi
"$venv/bin/python" -c "import llama_cpp; print('setup_llama_cpp: llama-cpp-python', llama_cpp.__version__)"
echo "$venv/bin/python"
