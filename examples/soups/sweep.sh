#!/usr/bin/env bash
# Rewarded soups (Ramé et al. 2023): two policies from one warm start, one
# rewarded for correct answers (correct.toml), one for even answers
# (even.toml); their weight averages at lambda = 0, 0.25, ..., 1
# (`rlf merge`), each scored on both rewards (`rlf eval`, greedy, 200
# held-out problems). Prints one JSON line per merge:
#   {"lambda": l, "correct": ..., "even": ...}   (l = the weight of the "correct" policy)
# Usage: bash examples/soups/sweep.sh [RLF] [OUT]   (defaults: rlf on PATH, runs/soups)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rlf="${1:-rlf}"
out="${2:-runs/soups}"
cache="$out/warm_start"
final() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["final_model"])'; }
a=$("$rlf" train "$here/correct.toml" --json --set run.out_dir="\"$out/correct\"" --set run.warm_start_cache="\"$cache\"" | final)
b=$("$rlf" train "$here/even.toml" --json --set run.out_dir="\"$out/even\"" --set run.warm_start_cache="\"$cache\"" | final)
for l in 0 0.25 0.5 0.75 1; do
  m="$out/soup-$l"
  w=$(python3 -c "print(1 - $l)")
  "$rlf" merge --model "$a" --model "$b" --weight "$l" --weight "$w" --out "$m" > /dev/null
  "$rlf" eval --config "$here/eval.toml" --set model.path="\"$m\"" --json |
    python3 -c "import json,sys; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(json.dumps({'lambda': $l, 'correct': j['reward/correct'], 'even': j['reward/even']}))"
done
