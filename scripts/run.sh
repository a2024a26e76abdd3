#!/usr/bin/env bash
# The README's main command: installs what is missing, builds rlf, and runs
# the main job on its embedded default. Extra arguments go to that job.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh -DRLF_BUILD_TESTS=OFF
# The main job: the embedded default run (train/demo.h): rlf generates
# two-digit addition problems, builds a small policy and a character-level
# tokenizer, warms the policy by SFT, trains it with GRPO against the exact
# answer, and prints held-out pass@1 before and after RL. Extra arguments go
# to `rlf demo` (e.g. --json, --seed 1, --set run.steps=50).
exec build/apps/cli/rlf demo --out runs/demo "$@"
