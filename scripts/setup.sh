#!/usr/bin/env bash
# Installs the Debian packages rlf needs to build and test (idempotent).
# As root it runs apt-get; otherwise it prints the exact command and stops.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git ccache
  # rlf's own dependencies
  libtorch-dev libgloo-dev libopenblas0-pthread nlohmann-json3-dev libpcre2-dev libicu-dev zlib1g-dev libtomlplusplus-dev libcurl4-openssl-dev libcpp-httplib-dev
  # sandboxed code execution
  bubblewrap libseccomp-dev python3
  # tests and benchmarks (strace: the crash tests' fault injection; chromium: the dashboard's browser test)
  libgtest-dev libgmock-dev libbenchmark-dev libsentencepiece-dev strace chromium chromium-driver
  python3-venv python3-torch python3-pip
  # the oracle's peft and accelerate (installed without their pins on torch)
  python3-psutil python3-yaml
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing Debian packages: ${missing[*]}"
  echo "setup: run as root:"
  echo "  $cmd"
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
