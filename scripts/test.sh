#!/usr/bin/env bash
# The README's test command: installs what is missing, creates the oracle
# virtual environment (Hugging Face transformers/tokenizers, math-verify) used
# as outside references, builds rlf, runs the whole suite with CTest, then the
# parser tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

bash scripts/setup.sh

# Oracle venv on Debian's python3-torch (system site packages), pinned versions.
venv="$root/.venv-oracle"
req="$root/tests/oracle/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "test: creating the oracle virtual environment in $venv"
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi

jobs="$(nproc 2>/dev/null || echo 2)"
bash scripts/build.sh -DRLF_ORACLE_PYTHON="$venv/bin/python" -DRLF_SHARED_DIR="$(cd "$root/.." && pwd)/shared"

# Every oracle test must run: a missing oracle fails instead of skipping.
export RLF_REQUIRE_ORACLE=1
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

# Parser and format tests under ASan + UBSan (torch-free build).
RLF_BUILD_DIR="$root/build-asan" bash scripts/build.sh -DRLF_SANITIZE=ON -DRLF_WITH_TORCH=OFF \
  -DRLF_ORACLE_PYTHON="$venv/bin/python" -DRLF_SHARED_DIR="$(cd "$root/.." && pwd)/shared"
(cd build-asan && ctest --output-on-failure -j"$jobs" -L parser --timeout 600)
