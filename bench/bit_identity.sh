#!/usr/bin/env bash
# Do two rlf binaries train identically? Runs every example config for 3
# steps (SFT warm starts cut to 20 steps, 8 held-out prompts, no warm-up)
# with the binary RLF, and writes OUT/<example>.metrics: metrics.jsonl
# without its time, throughput, memory and perf/ (MFU) fields. Run it with the binary
# before and after a refactor and compare the two folders:
#
#   bash bench/bit_identity.sh OLD/rlf /tmp/bits-old
#   bash bench/bit_identity.sh build/apps/cli/rlf /tmp/bits-new
#   bash bench/bit_identity.sh --compare /tmp/bits-old /tmp/bits-new
#
# ONLY="ppo_train dpo_train" restricts the run to those examples. Skipped:
# examples that need data prepared by a script (agent, stories_keywords) or
# a sweep (soups); the distillation examples get a 20-step teacher made once
# under OUT/../bit-identity-teacher by the binary given.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--compare" ]; then
  ok=0; bad=0
  for f in "$3"/*.metrics; do n=$(basename "$f")
    if cmp -s "$f" "$2/$n"; then ok=$((ok+1)); else bad=$((bad+1)); echo "differs or missing: $n"; fi
  done
  echo "identical: $ok, differing: $bad"; [ "$bad" = 0 ]; exit
fi
rlf="$(readlink -f "$1")"; out="$(mkdir -p "$2" && readlink -f "$2")"
cd "$root"
teacher_dir="$(dirname "$out")/bit-identity-teacher"
teacher="$teacher_dir/checkpoints/step-20/model"
[ -d "$teacher" ] || "$rlf" train examples/distill/teacher.toml --json --set run.steps=20 \
    --set run.out_dir="$teacher_dir" > "$teacher_dir.log" 2>&1
for cfg in examples/*/*.toml examples/*/*/*.toml; do
  name=$(echo "$cfg" | sed 's#examples/##; s#/#_#g; s#.toml##')
  if [ -n "${ONLY:-}" ] && ! echo " $ONLY " | grep -q " $name "; then continue; fi
  case "$name" in soups_*|distill_teacher|*shared|agent_*|stories_keywords_*) continue;; esac
  extra=()
  grep -q "^\[sft\]" "$cfg" && extra+=(--set sft.steps=20)
  case "$name" in distill_*) extra+=(--set distill.teacher_path="$teacher" --set run.eval_kl_model="$teacher");; esac
  d="$out/$name"; rm -rf "$d"
  timeout 900 "$rlf" train "$cfg" --json --set run.steps=3 --set run.out_dir="$d" --set run.samples_every=0 \
      --set data.eval_size=8 --set optim.warmup_steps=0 "${extra[@]}" > "$d.log" 2>&1
  rc=$?
  [ -f "$d/metrics.jsonl" ] && python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(json.dumps({k: v for k, v in d.items() if not (k == "time" or k.startswith("time/") or k.endswith("_s")
                      or "tokens_per_s" in k or "rss" in k or "mem" in k or k.startswith("perf/"))}, sort_keys=True))' "$d/metrics.jsonl" > "$out/$name.metrics"
  echo "$name rc=$rc"
done
