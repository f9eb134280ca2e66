#!/usr/bin/env bash
# Installs the Debian packages Tandem builds and tests with (only the missing ones).
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache pkg-config libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcpp-httplib-dev python3-numpy clang libclang-rt-14-dev
      libicu-dev nodejs npm)  # ICU: tokenizer Unicode classes; node/npm: the HF reference tests
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
