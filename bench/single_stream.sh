#!/usr/bin/env bash
# Single-stream decoding, side by side on the same weights: rlf (fp32 CPU
# fast path) against llama.cpp (llama-cpp-python from PyPI, built here for
# this CPU by bench/setup_llama_cpp.sh; the weights exported to GGUF f32 by
# `rlf export`), with the machine's memory bandwidth measured by the same run
# (bench/membw.c). Batch 1 reads every weight once per token, so the bound is
# bytes-per-token / read bandwidth; rlf's JSON reports the GB/s it achieved.
#
#   bash bench/single_stream.sh [OUT_DIR] [SHAPE] [NEW_TOKENS] [THREADS] [ROUNDS]
#
# Defaults: runs/single_stream stories110M 128 <all cores> 3. The two
# engines alternate for ROUNDS rounds (each a median of 3 generations); the
# summary is the median over rounds. Needs build/apps/cli/rlf and the oracle
# venv (scripts/test.sh creates .venv-oracle; it makes the random weights).
# Neither engine gets OMP_WAIT_POLICY: both keep their idle threads spinning
# briefly, which is their default and their fast setting.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out=${1:-$root/runs/single_stream}
shape=${2:-stories110M}
new_tokens=${3:-128}
threads=${4:-$(nproc)}
rounds=${5:-3}
rlf=${RLF:-$root/build/apps/cli/rlf}
py=${RLF_ORACLE_PYTHON:-$root/.venv-oracle/bin/python}
shared=${RLF_SHARED_DIR:-$root/../shared}
unset OMP_WAIT_POLICY
die() { echo "single_stream: $*" >&2; exit 1; }
[ -x "$rlf" ] || die "no rlf binary at $rlf (build first: bash scripts/build.sh, or set RLF=PATH)"
[ -x "$py" ] || die "no oracle python at $py (bash scripts/test.sh creates .venv-oracle, or set RLF_ORACLE_PYTHON)"
[ -f "$shared/tokenizers/hf/llama2/tokenizer.model" ] ||
  die "no $shared/tokenizers/hf/llama2/tokenizer.model (set RLF_SHARED_DIR to the shared/ folder)"
case "$shape" in stories15M|stories42M|stories110M) ;; *) die "shape '$shape': use stories15M, stories42M or stories110M" ;; esac
[[ "$new_tokens" =~ ^[1-9][0-9]*$ && "$threads" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  die "NEW_TOKENS, THREADS and ROUNDS must be positive integers (got '$new_tokens' '$threads' '$rounds')"
mkdir -p "$out"
llama_py=$(bash "$root/bench/setup_llama_cpp.sh" "${LLAMA_CPP_VENV:-$root/.venv-llama-cpp}" | tail -1)
"$llama_py" -c "import numpy" 2>/dev/null || "${llama_py%/python}/pip" install -q numpy

model="$out/$shape"
if [ ! -f "$model/model.safetensors" ]; then
  "$py" "$root/bench/random_hf_model.py" --shape "$shape" --tokenizer "$shared/tokenizers/hf/llama2" --out "$model"
fi
[ -f "$out/$shape.gguf" ] || "$rlf" export --gguf "$out/$shape.gguf" --type f32 --tokenizer "$model/tokenizer.bin" "$model"

gcc -O3 -march=native -fopenmp "$root/bench/membw.c" -o "$out/membw"
OMP_NUM_THREADS=$threads "$out/membw" 512 > "$out/membw.json"

: > "$out/rlf.jsonl"
: > "$out/llama_cpp.jsonl"
for r in $(seq "$rounds"); do
  "$rlf" bench generate --shape "$model" --batch 1 --dtype fp32 --threads "$threads" --new-tokens "$new_tokens" \
    --repeats 3 --json | tail -1 >> "$out/rlf.jsonl"
  # llama.cpp at every thread count up to ours; the summary takes its best
  "$llama_py" "$root/bench/llama_cpp_decode.py" --gguf "$out/$shape.gguf" --threads "$(seq -s, 1 "$threads")" \
    --new-tokens "$new_tokens" --repeats 3 2>/dev/null >> "$out/llama_cpp.jsonl"
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, subprocess, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rlf = [json.loads(l) for l in open(f"{out}/rlf.jsonl")]
ll = [json.loads(l) for l in open(f"{out}/llama_cpp.jsonl")]
bw = json.load(open(f"{out}/membw.json"))
flags = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
cpu = next((l.split(":", 1)[1].strip() for l in flags.splitlines() if l.startswith("Model name")), "?")
f = next((l.split(":", 1)[1].split() for l in flags.splitlines() if l.startswith("Flags")), [])
by_threads = {}
for x in ll:
    by_threads.setdefault(x["threads"], []).append(x["decode_tokens_per_s"])
best_t = max(by_threads, key=lambda t: statistics.median(by_threads[t]))
r_rate = statistics.median(x["decode_tokens_per_s"] for x in rlf)
l_rate = statistics.median(by_threads[best_t])
bytes_per_token = rlf[0]["weight_bytes_per_step"]
summary = {
    "shape": rlf[0]["shape"], "params": rlf[0]["params"], "dtype": "fp32", "rounds": rounds,
    "rlf_decode_tokens_per_s": r_rate, "rlf_all": [x["decode_tokens_per_s"] for x in rlf],
    "rlf_threads": rlf[0]["cpu"],
    "llama_cpp_decode_tokens_per_s": l_rate, "llama_cpp_threads": best_t,
    "llama_cpp_by_threads": {str(t): v for t, v in sorted(by_threads.items())},
    "ratio_rlf_over_llama_cpp": r_rate / l_rate,
    "weight_bytes_per_token": bytes_per_token,
    "rlf_gb_per_s": r_rate * bytes_per_token / 1e9, "llama_cpp_gb_per_s": l_rate * bytes_per_token / 1e9,
    "membw": bw, "bound_tokens_per_s_at_read_bw": bw["read_gb_s"] * 1e9 / bytes_per_token,
    "cpu": cpu, "cores": subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(),
    "avx2": "avx2" in f, "avx512f": "avx512f" in f, "avx512_bf16": "avx512_bf16" in f, "amx_bf16": "amx_bf16" in f,
    "llama_cpp_system_info": ll[0]["system_info"],
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
