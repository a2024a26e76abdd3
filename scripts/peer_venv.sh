#!/usr/bin/env bash
# Creates (once per machine) the virtual environment of today's peers
# (tests/peers/requirements.txt: torch 2.x, transformers 5.x, peft, TRL) and
# prints its python. It lives outside the clone, in
# ${RLF_PEER_VENV_DIR:-$HOME/.cache/rlf}/venv-peers-<hash of the requirements>,
# so every clone on the machine (CI's clean clones included) reuses it; a
# stamp file marks a complete install, so an interrupted one is redone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/tests/peers/requirements.txt"
hash="$(sha256sum "$req" | cut -c1-12)"
base="${RLF_PEER_VENV_DIR:-$HOME/.cache/rlf}"
venv="$base/venv-peers-$hash"
if [ ! -f "$venv/.complete" ]; then
  echo "peer_venv: creating $venv (several GB on first use)" >&2
  rm -rf "$venv"
  mkdir -p "$base"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
