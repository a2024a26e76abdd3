#!/usr/bin/env bash
# Builds rlf against a CUDA LibTorch 2.x into build-cuda/ (RLF_BUILD_DIR).
#
# LibTorch comes from the `torch` wheel on PyPI (headers, CMake config and the
# CUDA libraries; torch.utils.cmake_prefix_path), installed into its own
# virtual environment .venv-cuda (RLF_CUDA_VENV). Not part of .ci/run: the
# wheel and its CUDA libraries are several GB. Needs the CUDA toolkit (nvcc)
# for Torch's CMake config: CUDAToolkit_ROOT, else /usr/local/cuda.
#
# Environment (defaults in brackets):
#   RLF_CUDA_TORCH   the pip requirement [torch==2.11.0]
#   RLF_CUDA_VENV    where the virtual environment goes [.venv-cuda]
#   RLF_TORCH_PYTHON use this interpreter's torch instead (no venv, no
#                    download: a machine with torch installed and no network)
#   RLF_BUILD_DIR    [build-cuda]
#   RLF_BUILD_TARGET build one target only (e.g. rlf) [every target]
#   TORCH_CUDA_ARCH_LIST  GPU architectures for Torch's CMake config (kept in
#                    the CMake cache), which otherwise probes the GPU at
#                    configure time and fails on a machine without one [8.0;9.0]
# Extra arguments go to CMake (e.g. -DRLF_ORACLE_PYTHON=...).
#
# The binaries find LibTorch through their RUNPATH; on another machine with
# the same torch version, point LD_LIBRARY_PATH at its torch/lib (and the
# nvidia/*/lib folders of its site-packages).
#
# The fp32 CPU kernels are built for a portable x86-64 baseline
# (RLF_NATIVE_KERNELS=OFF) because a CUDA build usually runs on another
# machine than the one that built it; pass -DRLF_NATIVE_KERNELS=ON to tune
# them for this CPU.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${RLF_BUILD_DIR:-$root/build-cuda}"
jobs="$(nproc 2>/dev/null || echo 2)"

if [ -n "${RLF_TORCH_PYTHON:-}" ]; then
  py="$RLF_TORCH_PYTHON"
else
  venv="${RLF_CUDA_VENV:-$root/.venv-cuda}"
  req="${RLF_CUDA_TORCH:-torch==2.11.0}"
  if [ ! -x "$venv/bin/python" ]; then
    echo "build-cuda: creating $venv"
    python3 -m venv "$venv"
  fi
  stamp="$venv/.rlf-torch-requirement"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$req" ]; then
    echo "build-cuda: installing $req into $venv (several GB on first use)"
    "$venv/bin/pip" install -q --disable-pip-version-check "$req"
    echo "$req" > "$stamp"
  fi
  py="$venv/bin/python"
fi

info="$("$py" - <<'EOF'
import torch
print(torch.utils.cmake_prefix_path)
print(torch.__version__)
print(torch.version.cuda or "")
EOF
)" || { echo "build-cuda: $py cannot import torch"; exit 1; }
prefix="$(sed -n 1p <<<"$info")"
version="$(sed -n 2p <<<"$info")"
cuda="$(sed -n 3p <<<"$info")"
if [ -z "$cuda" ]; then
  echo "build-cuda: torch $version from $py is a CPU-only build; install a CUDA wheel (RLF_CUDA_TORCH)"
  exit 1
fi

cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [ ! -x "$cuda_root/bin/nvcc" ]; then
  echo "build-cuda: no nvcc under $cuda_root (set CUDAToolkit_ROOT to the CUDA toolkit)"
  exit 1
fi
echo "build-cuda: torch $version (CUDA $cuda) from $prefix; nvcc $("$cuda_root/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

arch="${TORCH_CUDA_ARCH_LIST:-8.0;9.0}"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCUDAToolkit_ROOT="$cuda_root" -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" \
  -DTORCH_CUDA_ARCH_LIST="$arch" -DRLF_NATIVE_KERNELS=OFF "$@" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" ${RLF_BUILD_TARGET:+--target "$RLF_BUILD_TARGET"}
echo "build-cuda: built into $build"
