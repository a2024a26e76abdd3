#!/usr/bin/env bash
# The README's main command: installs what is missing, builds rlf, and runs
# the main job on its embedded default. Extra arguments go to that job.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh -DRLF_BUILD_TESTS=OFF
shared="$(cd "$root/.." && pwd)/shared"
# Until the training loop lands, the main job is a generation demo on the real
# pretrained TinyStories model from llama2.c.
exec build/apps/cli/rlf generate --model "$shared/models/stories260K/stories260K.bin" \
  --prompt "Once upon a time" --temperature 0 --max-new-tokens 200 "$@"
