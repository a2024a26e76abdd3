#!/usr/bin/env bash
# The keyword example end to end (run from the repository root after
# scripts/build.sh): prompts -> coverage before -> GRPO -> coverage after.
set -euo pipefail
rlf=${RLF:-build/apps/cli/rlf}
if [ ! -x "$rlf" ]; then
  echo "stories_keywords: no rlf binary at $rlf: run 'bash scripts/build.sh' first (or set RLF=path/to/rlf)" >&2
  exit 1
fi
if [ ! -f ../shared/models/stories260K/stories260K.bin ]; then
  echo "stories_keywords: ../shared/models/stories260K/stories260K.bin not found: run from the repository root with shared/ beside it" >&2
  exit 1
fi
out=runs/stories_keywords
mkdir -p "$out"
python3 examples/stories_keywords/make_prompts.py "$out/prompts.jsonl"
cfg=examples/stories_keywords/train.toml
eval_args=(--config "$cfg" --set eval.max_new_tokens=64 --json)
before=$("$rlf" eval "${eval_args[@]}")
"$rlf" train "$cfg" "$@"
steps=$(python3 -c "import json; print(json.load(open('$out/summary.json'))['steps'])")
after=$("$rlf" eval "${eval_args[@]}" --set model.path="$out/checkpoints/step-$steps/model")
python3 - "$before" "$after" <<'PY'
import json, sys
b, a = (json.loads(x) for x in sys.argv[1:3])
print(f"keyword coverage on {b['n_prompts']} held-out prompts (greedy): before {b['mean_reward']:.3f}  after {a['mean_reward']:.3f}")
print(json.dumps({"coverage_before": b["mean_reward"], "coverage_after": a["mean_reward"]}))
PY
