#!/usr/bin/env bash
# Installs the Debian packages Tandem builds and tests with (only the missing ones).
# Node.js and npm are checked by command, not by package: a machine may carry a Node.js
# build whose `nodejs` package already contains npm (and conflicts with Debian's `npm`).
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache pkg-config libstb-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcpp-httplib-dev python3-numpy clang libclang-rt-14-dev gnuplot-nox
      libicu-dev  # ICU: tokenizer Unicode classes
      json-schema-test-suite python3-jsonschema)  # the JSON Schema -> GBNF conformance test
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)  # the HF reference tests and the OpenAI client test
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
