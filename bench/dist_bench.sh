#!/usr/bin/env bash
# Data-parallel side by side on one machine: 1 rank x C threads vs N ranks x
# C/N threads each (C = the cores), the same config and global batch, run one
# after the other. Prints one JSON object per layout: medians over the steps
# after the first of time/step_s, time/rollout_s, time/update_s and
# rollout/tokens_per_s (global tokens / the slowest rank's rollout time), and
# the payload each rank all-reduced per step (dist/payload_mb).
#
#   bash bench/dist_bench.sh [CONFIG] [N]     # defaults: bench/dist_train.toml 2
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
config="${1:-$root/bench/dist_train.toml}"
n="${2:-2}"
rlf="${RLF_BIN:-$root/build/apps/cli/rlf}"
cores="$(nproc)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=PASSIVE
cd "$root"

"$rlf" train "$config" --quiet --threads "$cores" --set run.out_dir="$out/one"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$rlf" train "$config" --quiet --threads $((cores / n > 0 ? cores / n : 1)) --set run.out_dir="$out/ranks" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

python3 - "$out" "$cores" "$n" <<'PY'
import json, statistics, sys
out, cores, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for name, ranks, threads in (("one", 1, cores), ("ranks", n, max(1, cores // n))):
    rows = [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")][1:]
    med = lambda k: statistics.median(r.get(k, 0.0) for r in rows)
    print(json.dumps({"layout": f"{ranks} rank(s) x {threads} thread(s)", "steps": len(rows),
                      "step_s": med("time/step_s"), "rollout_s": med("time/rollout_s"),
                      "update_s": med("time/update_s"), "rollout_tokens_per_s": med("rollout/tokens_per_s"),
                      "payload_mb_per_step": med("dist/payload_mb"), "reward_mean_last": rows[-1].get("reward/mean")}))
PY
