#!/usr/bin/env python3
"""Asynchronous against synchronous rollouts on the same run (rlf train).

For each rollout.max_staleness K in --staleness and each seed, runs CONFIG
for --steps steps (no token budget, no checkpoints: one pipeline drain at the
start) from the same cached SFT warm start, and reports per K the median step
time (the first step excluded: it has nothing to overlap), the median update
time and rollout wait, the mean reward of the last 10 steps, and held-out
greedy pass@1 before and after, with the spread over seeds. The machine's CPU
model and flags and every command are recorded in the JSON written to
--out/async_bench.json. Measures; asserts nothing.

  python3 bench/async_bench.py --rlf build/apps/cli/rlf --config examples/recipes/grpo.toml \
      --steps 40 --seeds 3 --out out/async_bench [--device cuda] [--threads N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def cpu_info():
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Flags"):
                info[k.strip()] = v.strip()
    except Exception as e:  # noqa: BLE001 - a machine without lscpu still gets its figures
        info["error"] = str(e)
    flags = set(info.get("Flags", "").split())
    info["Flags"] = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4")))
    return info


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlf", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--staleness", default="0,1")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", action="append", default=[], help="extra KEY=VALUE for every run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    result = {"config": a.config, "steps": a.steps, "device": a.device, "threads": a.threads, "cpu": cpu_info(),
              "runs": [], "by_staleness": {}}
    for k in [int(x) for x in a.staleness.split(",")]:
        rows = []
        for seed in range(a.seeds):
            out_dir = os.path.join(a.out, f"k{k}-seed{seed}")
            cmd = [a.rlf, "train", a.config, "--json", "--quiet", "--device", a.device, "--threads", str(a.threads),
                   "--set", f"rollout.max_staleness={k}", "--set", f"run.steps={a.steps}",
                   "--set", "run.rollout_token_budget=0", "--set", "run.checkpoint_every=0",
                   "--set", f"run.seed={seed}", "--set", f"run.out_dir={out_dir}",
                   "--set", f"run.warm_start_cache={os.path.join(a.out, 'warm_start')}"]
            for s in a.set:
                cmd += ["--set", s]
            t0 = time.time()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr)
                raise SystemExit(f"failed: {' '.join(cmd)}")
            summary = json.loads(proc.stdout.strip().splitlines()[-1])
            m = read_jsonl(os.path.join(out_dir, "metrics.jsonl"))
            steps = [x["time/step_s"] for x in m[1:]]
            row = {"staleness": k, "seed": seed, "command": " ".join(cmd), "wall_s": time.time() - t0,
                   "step_s_median": statistics.median(steps),
                   "update_s_median": statistics.median(x["time/update_s"] for x in m[1:]),
                   "rollout_wait_s_median": statistics.median(x.get("time/rollout_wait_s", x["time/step_s"] - x["time/update_s"]) for x in m[1:]),
                   "reward_last10": statistics.mean(x.get("reward/mean", 0.0) for x in m[-10:]),
                   "reward_curve": [x.get("reward/mean") for x in m],
                   "pass1_before": summary.get("pass1_before"), "pass1_after": summary.get("pass1_after")}
            rows.append(row)
            result["runs"].append(row)
            print(json.dumps({kk: v for kk, v in row.items() if kk not in ("reward_curve", "command")}), flush=True)
        agg = {}
        for key in ("step_s_median", "update_s_median", "rollout_wait_s_median", "reward_last10", "pass1_after"):
            vals = [r[key] for r in rows if r[key] is not None]
            agg[key] = {"mean": statistics.mean(vals), "std": statistics.stdev(vals) if len(vals) > 1 else 0.0}
        result["by_staleness"][str(k)] = agg
    base = result["by_staleness"].get("0")
    for k, agg in result["by_staleness"].items():
        if base and k != "0":
            agg["step_time_ratio_vs_sync"] = agg["step_s_median"]["mean"] / base["step_s_median"]["mean"]
    with open(os.path.join(a.out, "async_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["by_staleness"], indent=1))


if __name__ == "__main__":
    main()
