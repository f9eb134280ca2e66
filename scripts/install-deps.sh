#!/usr/bin/env bash
# Installs the Debian packages Tandem builds and tests with (only the missing ones).
# Node.js and npm are checked by command, not by package: a machine may carry a Node.js
# build whose `nodejs` package already contains npm (and conflicts with Debian's `npm`).
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache pkg-config libstb-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcpp-httplib-dev python3-numpy clang libclang-rt-14-dev gnuplot-nox
      libicu-dev  # ICU: tokenizer Unicode classes
      json-schema-test-suite python3-jsonschema  # the JSON Schema -> GBNF conformance test
      python3-jinja2)  # the oracle of the chat-template interpreter (tests/text/jinja_oracle.py)
# The Arm64 step's packages (scripts/arm64-tests.sh) only when asked for: `--arm64` (as
# scripts/test.sh does) or TANDEM_ARM64_CI=1. They enable Debian's arm64 multiarch, which the x86
# build, the tests and the demo do not need.
arm64=0
# The Hexagon step's packages (scripts/hexagon-tests.sh): `--hexagon` or TANDEM_HEXAGON_CI=1.
hexagon=0
# The policy trainer's packages (tools/train) only where training or its tests run: `--train` or
# TANDEM_TRAIN=1. The runtime stays C++ without Python.
train=0
for a in "$@"; do
  case "$a" in
    --arm64) arm64=1 ;;
    --train) train=1 ;;
    --hexagon) hexagon=1 ;;
  esac
done
[ "${TANDEM_ARM64_CI:-0}" = 1 ] && arm64=1
[ "${TANDEM_TRAIN:-0}" = 1 ] && train=1
[ "${TANDEM_HEXAGON_CI:-0}" = 1 ] && hexagon=1
if [ "$train" = 1 ]; then
  # Debian's torch calls the generic libblas.so.3; OpenBLAS must provide it (the reference BLAS
  # of libblas3 did 3.5 GFLOP/s of torch sgemm here against OpenBLAS's 25).
  pkgs+=(python3-torch libopenblas0-pthread)
fi
if [ "$arm64" = 1 ]; then
  pkgs+=(g++-aarch64-linux-gnu qemu-user-static curl  # cross compiler, emulator, smoke test
         dpkg-dev  # dpkg-source: scripts/httplib-static.sh unpacks Debian's cpp-httplib source
         # the Arm64 build's libraries (multiarch; header-only ones are shared with x86)
         libicu-dev:arm64 libgtest-dev:arm64 libstb-dev:arm64 libcpp-httplib-dev:arm64
         libssl-dev:arm64 zlib1g-dev:arm64 libbrotli-dev:arm64)
fi
if [ "$hexagon" = 1 ]; then
  # clang-14 compiles Hexagon v67 + HVX; lld is ld.lld by the name clang's Hexagon driver looks
  # for (lld-14 beneath it); llvm-14: llvm-objdump-14 for the static cost count; the emulator.
  pkgs+=(clang-14 lld lld-14 llvm-14 qemu-user-static)
fi
missing=()
for p in "${pkgs[@]}"; do
  # A package installed for two architectures (libicu-dev and libicu-dev:arm64) is ambiguous to
  # `dpkg -s name`: ask for the native one by name then.
  dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$(dpkg --print-architecture)" >/dev/null 2>&1 || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)  # the HF reference tests and the OpenAI client test
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # The :arm64 packages need the architecture enabled before the package lists are fetched.
  if [ "$arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if [ "$train" = 1 ]; then
  # Installing OpenBLAS makes it the libblas.so.3 alternative in auto mode (priority 100 against
  # the reference BLAS's 10), but a machine may hold the link in manual mode: select it explicitly.
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
  for lib in libblas.so.3 liblapack.so.3; do
    name="$lib-$multiarch"
    target="/usr/lib/$multiarch/openblas-pthread/$lib"
    if [ -e "$target" ] && [ "$(readlink -f "/usr/lib/$multiarch/$lib")" != "$(readlink -f "$target")" ]; then
      echo "selecting OpenBLAS for $name"
      SUDO=""
      [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      $SUDO update-alternatives --set "$name" "$target"
    fi
  done
fi
