#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run), on a fresh Debian 12 machine. Stages
# (docs/testing.md says what each covers and why):
#   setup       install the missing Debian packages (the policy trainer's too, python3-torch and
#               OpenBLAS: its tests train a tiny model and compare its export with Tandem, tools/train)
#   release     Release build (gcc) + every test (ctest)
#   sanitizers  clang build with ASan + UBSan (and libFuzzer's coverage, for the fuzz stage) + the
#               tests of code that handles memory, threads and untrusted input (CMakeLists.txt's
#               sanitizer selection)
#   tsan        the thread pool and the resource governor under ThreadSanitizer
#   arm64       static cross build, kernel / golden tests under qemu per Arm tier, server smoke test
#               (TANDEM_ARM64_CI=0 skips it)
#   hexagon     the DSP side built with Debian's clang-14 for Hexagon v67 + HVX, its kernels and op
#               server tested under qemu-hexagon-static against the host's scalar reference
#               (TANDEM_HEXAGON_CI=0 skips it)
#   fuzz        every libFuzzer target for FUZZ_SECONDS (default 60) each, two at a time, on the
#               sanitizer stage's build
# Each stage's wall time is printed when it ends and in a table at the end; a stage over its
# budget (scripts/ci-budgets.conf) fails the run once every stage has run.
# Golden-data tests read ../shared/golden when present and skip visibly otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
arm64=${TANDEM_ARM64_CI:-1}
hexagon=${TANDEM_HEXAGON_CI:-1}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths relative to the checkout in ccache's keys: a clone in another folder (CI's) hits the
# objects a build in this one left. The sloppiness lets ccache cache objects compiled with a
# precompiled header (CMakeLists.txt's test targets).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}

source scripts/ci-stages.sh

stage_setup() {
  local flags=(--train)
  [ "$arm64" = 1 ] && flags+=(--arm64)
  [ "$hexagon" = 1 ] && flags+=(--hexagon)
  bash scripts/install-deps.sh "${flags[@]}"
}

stage_release() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build -j"$JOBS"
  ci_tests release-ctest ctest --test-dir build -j"$JOBS" --output-on-failure --no-tests=error
}

# One clang tree for the sanitizer tests and the fuzzers (CMakeLists.txt: TANDEM_SANITIZE with
# clang adds libFuzzer's coverage): every library is compiled once for both.
san=build-san
stage_sanitizers() {
  CC=clang CXX=clang++ cmake -S . -B "$san" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=ON \
    -DTANDEM_BENCH=OFF >/dev/null
  ninja -C "$san" -j"$JOBS" tandem_tests tandem_runtime_tests tandem-server tandem-gen-model tandem-apply-template
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ci_tests sanitizers-ctest ctest --test-dir "$san" -j"$JOBS" --output-on-failure --no-tests=error
}

stage_tsan() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_TSAN=ON -DTANDEM_BENCH=OFF >/dev/null
  ninja -C build-tsan -j"$JOBS" tandem_runtime_tests
  TSAN_OPTIONS=halt_on_error=1 ci_tests tsan-gtest ./build-tsan/tandem_runtime_tests
}

stage_arm64() {
  JOBS=$JOBS ci_tests arm64-qemu bash scripts/arm64-tests.sh
}

stage_hexagon() {
  JOBS=$JOBS ci_tests hexagon-qemu bash scripts/hexagon-tests.sh
}

stage_fuzz() {
  FUZZ_BUILD=$(pwd)/$san JOBS=$JOBS ci_tests fuzz bash fuzz/run_all.sh "${FUZZ_SECONDS:-60}"
}

run_stage setup stage_setup
run_stage release stage_release
run_stage sanitizers stage_sanitizers
run_stage tsan stage_tsan
if [ "$arm64" = 1 ]; then run_stage arm64 stage_arm64; else skip_stage arm64 "TANDEM_ARM64_CI=0"; fi
if [ "$hexagon" = 1 ]; then run_stage hexagon stage_hexagon; else skip_stage hexagon "TANDEM_HEXAGON_CI=0"; fi
run_stage fuzz stage_fuzz
finish_stages
