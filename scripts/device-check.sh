#!/usr/bin/env bash
# The CUDA checks, on a machine with an NVIDIA GPU, for a build made by
# scripts/build-cuda.sh (here or on another machine with the same torch).
#
#   scripts/device-check.sh [OUT_DIR]        # logs and JSON into OUT_DIR [out/device]
#
# 1. tests/device (test_device) with RLF_REQUIRE_CUDA=1: logits against
#    transformers on the GPU, rollout = trainer log-probs, GRPO runs and exact
#    resume on the GPU; it fails rather than skips when CUDA is missing.
# 2. Benchmarks (RLF_DEVICE_BENCH=0 skips): `rlf bench generate` and `rlf bench
#    train` on the GPU next to transformers' generate and PyTorch eager
#    training (bench/hf_generate_reference.py, bench/pytorch_train_reference.py)
#    at the same shapes, in the same run.
# 3. CPU suites under this LibTorch 2.x (RLF_DEVICE_SUITES, default: model,
#    rollout, algorithms, trainer): the code base against a newer LibTorch.
#
# Environment: RLF_BUILD_DIR [build-cuda]; RLF_TORCH_PYTHON, the interpreter
# whose torch/lib the binaries load and which runs the oracle and the peers
# [python3]; RLF_SHARED (shared/ data: models/stories260K is enough);
# RLF_EXTRA_LIB_PATH, prepended to LD_LIBRARY_PATH (libraries the binaries need
# that this machine lacks). Every step runs under `timeout`; the script goes on
# after a failing step and exits non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${RLF_BUILD_DIR:-$root/build-cuda}"
out="${1:-$root/out/device}"
py="$(command -v "${RLF_TORCH_PYTHON:-python3}")" || { echo "device-check: no ${RLF_TORCH_PYTHON:-python3}"; exit 1; }
mkdir -p "$out"

site="$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)" \
  || { echo "device-check: $py cannot import torch"; exit 1; }
libs="$site/torch/lib"
for d in "$site"/nvidia/*/lib "$site"/nvidia/cu*/lib; do [ -d "$d" ] && libs="$libs:$d"; done
# Only rlf's binaries (and what they start) see these libraries: the peers run in python3's own environment.
bin_env=(env LD_LIBRARY_PATH="${RLF_EXTRA_LIB_PATH:+$RLF_EXTRA_LIB_PATH:}$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
export RLF_SOURCE_DIR="$root" RLF_BINARY_DIR="$build" RLF_ORACLE_PYTHON="$py" RLF_REQUIRE_CUDA=1 RLF_REQUIRE_ORACLE=1
export PYTHONUNBUFFERED=1

failed=0
step() {  # step NAME SECONDS COMMAND...
  local name="$1" secs="$2"
  shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "device-check: $name rc=$rc ($((SECONDS - t0)) s)"
  [ $rc -eq 0 ] || { failed=1; tail -25 "$out/$name.log"; }
}

{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  "$py" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)' 2>&1
  nproc
} | tee "$out/machine.txt"

step test_device 300 "${bin_env[@]}" "$build/tests/device/test_device"
grep "^\[ cuda \]" "$out/test_device.log"

if [ "${RLF_DEVICE_BENCH:-1}" != 0 ]; then
  rlf="$build/apps/cli/rlf"
  for dt in bf16 fp32; do
    step "gen_rlf_$dt" 120 "${bin_env[@]}" "$rlf" bench generate --device cuda --shape stories110M --batch 64 --new-tokens 128 \
      --dtype "$dt" --repeats 3 --json
    step "train_rlf_$dt" 120 "${bin_env[@]}" "$rlf" bench train --device cuda --shape stories110M --batch 16 --seq 256 \
      --dtype "$dt" --steps 5 --json
  done
  step gen_hf 200 "$py" "$root/bench/hf_generate_reference.py" --device cuda --shape stories110M --batch 64 \
    --new-tokens 128 --repeats 3 --dtype bf16 --dtype fp32
  step train_torch 200 "$py" "$root/bench/pytorch_train_reference.py" --device cuda --shape stories110M --batch 16 \
    --seq 256 --steps 5 --dtype bf16 --dtype fp32 --attention sdpa
  for f in "$out"/gen_*.log "$out"/train_*.log; do tail -n 3 "$f" | grep '^{' ; done > "$out/bench.jsonl"
fi
for s in ${RLF_DEVICE_SUITES:-model rollout algorithms trainer}; do
  bin="$(ls "$build"/tests/*/test_"$s" 2>/dev/null | head -1)"
  [ -n "$bin" ] || { echo "device-check: no test_$s in $build"; failed=1; continue; }
  step "cpu_$s" 150 "${bin_env[@]}" "$bin"
done

exit $failed
