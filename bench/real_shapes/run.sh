#!/usr/bin/env bash
# GRPO with LoRA at the shapes users bring (docs/benchmarks.md, "GRPO with
# LoRA at real shapes"): for each shape, a random-weight model with its real
# tokenizer (make_random.py, made once under WORK), then
# `rlf train grpo_lora.toml` under /usr/bin/time. Prints one line per shape:
# parameters, median seconds per step (and its rollout/update split), peak RSS,
# the load when it started, the CPU; then each phase's peak (metrics mem/*)
# next to `rlf train --dry-run`'s estimate.
#
#   bash bench/real_shapes/run.sh [WORK] [DTYPE]        # WORK default /tmp/rlf-real-shapes, DTYPE fp32|bf16
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-/tmp/rlf-real-shapes}"
dtype="${2:-fp32}"
shared="${RLF_SHARED_DIR:-$root/../shared}"
rlf="${RLF_BIN:-$root/build/apps/cli/rlf}"
py="$(bash "$root/scripts/peer_venv.sh")"
mkdir -p "$work"
declare -A tokenizer=([qwen3-0.6b]=qwen2.5 [llama-3.2-1b]=llama3.2)
for shape in qwen3-0.6b llama-3.2-1b; do
  model="$work/$shape"
  [ -f "$model/config.json" ] || "$py" "$root/bench/real_shapes/make_random.py" --shape "$shape" \
      --tokenizer "$shared/tokenizers/hf/${tokenizer[$shape]}" --out "$model" > /dev/null
  out="$work/out-$shape-$dtype"
  rm -rf "$out"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  "$rlf" train "$root/bench/real_shapes/grpo_lora.toml" --dry-run --json --set model.path="$model" \
      --set model.dtype="$dtype" > "$out.plan.json"
  /usr/bin/time -v "$rlf" train "$root/bench/real_shapes/grpo_lora.toml" --json --set model.path="$model" \
      --set model.dtype="$dtype" --set run.out_dir="$out" > "$out.json" 2> "$out.time"
  python3 - "$shape" "$dtype" "$out" "$load" <<'PY'
import json, re, statistics, sys, subprocess
shape, dtype, out, load = sys.argv[1:]
rows = [json.loads(l) for l in open(f"{out}/metrics.jsonl")]
med = lambda k: statistics.median(r[k] for r in rows)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{out}.time").read()).group(1))
cfg = json.load(open(f"{out}/../{shape}/config.json"))
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/Model name: *//p'"], capture_output=True, text=True).stdout.strip()
print(f"{shape} {dtype}: {len(rows)} steps, median {med('time/step_s'):.1f} s/step "
      f"(rollout {med('time/rollout_s'):.1f} s, update {med('time/update_s'):.1f} s), "
      f"peak RSS {rss / 1024:,.0f} MB, layers {cfg['num_hidden_layers']}, hidden {cfg['hidden_size']}, "
      f"vocab {cfg['vocab_size']}, load at start {load}, CPU {cpu}")
plan = json.load(open(f"{out}.plan.json"))
phases = {k: max(r.get(k, 0) for r in rows) for k in ("mem/rss_peak_mb_rollout", "mem/rss_peak_mb_reference", "mem/rss_peak_mb_update")}
print(f"  per phase (max over steps): " + ", ".join(f"{k.split('_')[-1]} {v:,.0f} MB" for k, v in phases.items()) +
      f"; rlf train --dry-run estimated update {plan['update_peak_mb']:,.0f} MB, rollout {plan['rollout_peak_mb']:,.0f} MB")
PY
done
