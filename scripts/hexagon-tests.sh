#!/usr/bin/env bash
# The Hexagon step of CI (scripts/test.sh): the DSP side built with Debian's clang-14 for Hexagon
# v67 with HVX (cmake/hexagon-clang14.cmake, a configure of its own: src/hexagon/dsp), then the
# host's Hexagon tests against it under qemu-hexagon-static: the HVX products against the scalar
# reference bit for bit, the op server's refusals, the transport's dead / hung DSP side.
#
#   bash scripts/hexagon-tests.sh      (after scripts/install-deps.sh --hexagon and the x86 build)
#
# TANDEM_HEXAGON_REQUIRED=1: a missing emulator or DSP build fails the tests here instead of
# skipping them (the release stage's run of the same tests skips when they are absent).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}  # ccache's settings come from scripts/test.sh when CI runs this
for tool in clang++-14 ld.lld llvm-objdump-14 qemu-hexagon-static; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool not found (bash scripts/install-deps.sh --hexagon)"; exit 1; }
done

echo "== Hexagon build (clang-14, v67 + HVX 128 B, freestanding)"
cmake -S src/hexagon/dsp -B build-hexagon -G Ninja -DCMAKE_TOOLCHAIN_FILE="$(pwd)/cmake/hexagon-clang14.cmake" >/dev/null
ninja -C build-hexagon -j"$JOBS"
echo "== host test binary"
ninja -C build -j"$JOBS" tandem_tests

echo "== Hexagon tests under qemu-hexagon-static"
TANDEM_HEXAGON_REQUIRED=1 TANDEM_HEXAGON_DSP="$(pwd)/build-hexagon/tandem-hexagon-dsp" \
  ./build/tandem_tests --gtest_brief=1 --gtest_filter='Shapes/HvxMatmul.*:HexagonOpServer.*:QemuTransport.*'

echo "== static cost of the HVX products (packets as compiled; not a timing: bench/RESULTS.md)"
/usr/bin/python3 scripts/hexagon-static-cost.py build-hexagon
