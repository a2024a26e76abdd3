#!/usr/bin/env bash
# rlf serve under load, side by side: continuous batching (--max-batch 64) vs
# one sequence at a time (--max-batch 1), same server, same client
# (bench/serve_load.py with the official openai client, half the requests
# streamed, seeded, ignore_eos so every request decodes max_tokens).
#
#   bash bench/serve_bench.sh MODEL [TOKENIZER] [OUT_DIR] [LEVELS] [REQUESTS] [MAX_TOKENS]
#
# Writes OUT_DIR/load_mb{64,1}.json and OUT_DIR/cpu.json; needs the oracle venv
# (scripts/test.sh creates .venv-oracle) and build/apps/cli/rlf.
set -euo pipefail
model=${1:?model path}
tok=${2:-}
out=${3:-runs/serve_bench}
levels=${4:-1,4,16,64}
requests=${5:-64}
max_tokens=${6:-32}
py=${RLF_ORACLE_PYTHON:-.venv-oracle/bin/python}
rlf=${RLF:-build/apps/cli/rlf}
port=${PORT:-8131}
mkdir -p "$out"
name=$(basename "${model%/}"); name=${name%.bin}
for mb in 64 1; do
  "$rlf" serve --model "$model" ${tok:+--tokenizer "$tok"} --port "$port" --max-batch "$mb" --max-seq-len 256 \
    --served-model-name "$name" > "$out/server_mb$mb.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.2; done
  "$py" bench/serve_load.py --base-url "http://127.0.0.1:$port/v1" --model "$name" --concurrency "$levels" \
    --requests "$requests" --max-tokens "$max_tokens" --ignore-eos > "$out/load_mb$mb.json"
  kill -INT "$pid"; wait "$pid" || true
done
python3 - "$out" <<'PY'
import json, subprocess, sys
flags = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in flags.splitlines() if l.startswith("Model name")), "?")
f = next((l.split(":", 1)[1].split() for l in flags.splitlines() if l.startswith("Flags")), [])
json.dump({"cpu": model, "cores": subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(),
           "avx2": "avx2" in f, "avx512f": "avx512f" in f, "avx512_bf16": "avx512_bf16" in f, "amx_bf16": "amx_bf16" in f},
          open(sys.argv[1] + "/cpu.json", "w"))
for mb in (64, 1):
    d = json.load(open(f"{sys.argv[1]}/load_mb{mb}.json"))
    for l in d["levels"]:
        lat = l["latency_s"]; tt = l["ttft_streamed_s"]
        print(f"max-batch {mb:2d}  concurrency {l['concurrency']:3d}  ok {l['ok']}/{l['requests']}  "
              f"{l['tokens_per_s']:8.1f} tok/s  latency p50 {lat['p50']:.3f} p90 {lat['p90']:.3f} p99 {lat['p99']:.3f} s  "
              f"ttft p50 {tt['p50']:.3f} s")
PY
