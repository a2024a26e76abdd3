#!/usr/bin/env bash
# The README's test command: installs what is missing, creates the oracle
# virtual environment (Hugging Face transformers/tokenizers, math-verify) used
# as outside references, builds rlf with its tests (whatever configured build/
# before: `scripts/run.sh` builds without them), then runs the whole suite in
# tiers — "fast" (unit and oracle tests), "e2e" (whole runs, the rlf binary,
# the examples) — and the parser tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer. A tier that runs no test is a failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$(date +%s)

bash scripts/setup.sh

# Oracle venv on Debian's python3-torch (system site packages), pinned versions.
venv="$root/.venv-oracle"
req="$root/tests/oracle/requirements.txt"
# peft and accelerate ask for torch >= 1.13.0, which pip reads as excluding
# Debian's 1.13.0a0 (and would install another torch): installed without deps.
req_nodeps="$root/tests/oracle/requirements-nodeps.txt"
stamp="$venv/.requirements.sha256"
want="$(cat "$req" "$req_nodeps" | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "test: creating the oracle virtual environment in $venv"
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req_nodeps"
  echo "$want" > "$stamp"
fi

jobs="$(nproc 2>/dev/null || echo 2)"
shared="$(cd "$root/.." && pwd)/shared"
peers="$(bash scripts/peer_venv.sh)"  # today's transformers/peft on torch 2.x (tests/model/test_families_oracle.cpp)
bash scripts/build.sh -DRLF_BUILD_TESTS=ON -DRLF_ORACLE_PYTHON="$venv/bin/python" -DRLF_SHARED_DIR="$shared" \
  -DRLF_PEER_PYTHON="$peers"

# Every oracle test must run: a missing oracle fails instead of skipping.
export RLF_REQUIRE_ORACLE=1
tier() {  # tier NAME BUILD_DIR CTEST_SELECTION...
  local name=$1 dir=$2 t0=$(date +%s)
  shift 2
  echo "test: tier '$name' in $dir"
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j"$jobs" --timeout 1800 "$@")
  echo "test: tier '$name' passed in $(( $(date +%s) - t0 )) s"
}
tier fast build -LE e2e    # unit and oracle tests (labels fast and parser)
tier e2e build -L e2e      # whole runs, the rlf binary, the examples

# Parser and format tests under ASan + UBSan (torch-free build of just their executables).
RLF_BUILD_DIR="$root/build-asan" RLF_BUILD_TARGET=rlf_parser_tests bash scripts/build.sh -DRLF_BUILD_TESTS=ON -DRLF_SANITIZE=ON -DRLF_WITH_TORCH=OFF \
  -DRLF_ORACLE_PYTHON="$venv/bin/python" -DRLF_SHARED_DIR="$shared"
tier parser build-asan -L parser
echo "test: the whole suite passed in $(( $(date +%s) - start )) s"
