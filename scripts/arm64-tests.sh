#!/usr/bin/env bash
# The Arm64 step of CI (scripts/test.sh): cross-build with Debian's g++-aarch64-linux-gnu
# (cmake/aarch64-linux-gnu.cmake, ccache as the x86 build), then run the tests that decide Arm
# correctness under qemu-user once per tier, then the server smoke test (scripts/arm64-smoke.sh).
#
#   bash scripts/arm64-tests.sh            (after scripts/install-deps.sh --arm64 and the x86 build)
#
# Tiers and qemu CPU models: cortex-a53 (Armv8.0: neon only), cortex-a76 (Armv8.2 with dotprod,
# no i8mm), max (every feature qemu has: i8mm). Each run first checks that the model selects its
# tier (CpuFeatures.BestTierIsTheExpectedOne); on the older models the higher tiers' kernels are
# asked for and must not be reached (an SDOT or SMMLA there dies of SIGILL).
#
# Which tests, and why (CI's whole run must stay under 45 minutes on 2 cores, and emulation is
# slow; the times per tier are in docs/arm64.md): tandem_port_tests (CMakeLists.txt) holds the
# kernel suites (every Arm kernel against its scalar reference on random inputs with odd sizes, the
# Arm tiers' bit-equality, the dispatcher, and the scalar kernels that run unchanged on Arm), the
# quantisation formats (ggml's bit-exact blocks) and the golden-logits tests (every golden file
# against llama.cpp's logits through the whole model). Not here: the serving, HTTP, grammar, agent
# and tokenizer suites, which hold no architecture-dependent code beyond what these reach and run
# their models on the same kernels; the server itself is exercised once per tier by the smoke test.
#
#   * max (i8mm): all of tandem_port_tests. The kernel suites there run every Arm tier's kernels
#     (the CPU model has every feature), and the golden files go through the whole model once.
#   * cortex-a76 (dotprod), cortex-a53 (neon): the kernel suites, the quantisation formats and the
#     dispatcher on that CPU model — every kernel of the tier against its reference, where an
#     instruction of a higher tier dies of SIGILL — but not the golden files, whose arithmetic is
#     those kernels' (checked here) and whose whole-model path the smoke test runs on every tier.
#     They run beside the max run (two qemu processes, one per core).
#   * TANDEM_ARM64_FULL=1: all of tandem_port_tests on every tier, one after the other (issue 29's
#     acceptance run).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
qemu=$(command -v qemu-aarch64-static) || { echo "FAILED: qemu-aarch64-static not found"; exit 1; }

# Static binaries (TANDEM_STATIC): what a phone runs, and what qemu-user runs reliably here (a
# dynamically linked Arm64 binary hung in its first pthread_create under Debian 12's qemu-user
# 7.2 with -L, on every CPU model). cpp-httplib's archive comes from Debian's source package.
echo "== Arm64 cross build (static: tests and tandem-server)"
httplib=$(bash scripts/httplib-static.sh build-arm64/httplib aarch64-linux-gnu-g++ | tail -n1)
cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DTANDEM_BENCH=OFF -DTANDEM_STATIC=ON -DTANDEM_HTTPLIB_STATIC="$httplib" >/dev/null
# glibc's linker warnings about getaddrinfo / dlopen in static binaries (see CMakeLists.txt) are
# expected; everything else is shown.
set +e
ninja -C build-arm64 -j"$JOBS" tandem_port_tests tandem-server 2>&1 | grep -v -e 'statically linked applications requires' \
  -e 'in function'
status=${PIPESTATUS[0]}
set -e
[ "$status" = 0 ] || { echo "FAILED: Arm64 build (ninja exit $status)"; exit 1; }

# The lower tiers leave out the golden files (see above).
lower_filter='-Files/GoldenLogits*.*:GoldenLogitsSummary.*:Files/HybridGoldenLogits.*'
run_tier() {  # cpu tier filter
  local start
  start=$(date +%s)
  echo "== Arm64 tests under qemu -cpu $1 (tier $2; filter $3)"
  TANDEM_EXPECT_TIER=$2 "$qemu" -cpu "$1" build-arm64/tandem_port_tests --gtest_brief=1 --gtest_filter="$3"
  echo "   (-cpu $1: $(( $(date +%s) - start )) s)"
}
if [ "${TANDEM_ARM64_FULL:-0}" = 1 ]; then
  for model in max:i8mm cortex-a76:dotprod cortex-a53:neon; do run_tier "${model%%:*}" "${model##*:}" '*'; done
else
  # max in the background, the two lower tiers one after the other beside it; each log is printed
  # whole when its run ends, so the two do not interleave.
  logs=$(mktemp -d)
  run_tier max i8mm '*' >"$logs/max.log" 2>&1 &
  max_pid=$!
  lower=0
  { run_tier cortex-a76 dotprod "$lower_filter" && run_tier cortex-a53 neon "$lower_filter"; } >"$logs/lower.log" 2>&1 || lower=$?
  max=0
  wait "$max_pid" || max=$?
  cat "$logs/max.log" "$logs/lower.log"
  rm -rf "$logs"
  [ "$max" = 0 ] && [ "$lower" = 0 ] || { echo "FAILED: Arm64 tests under qemu"; exit 1; }
fi

bash scripts/arm64-smoke.sh build build-arm64
