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
# Which tests, and why (CI's whole run must stay under 45 minutes on 2 cores; emulation runs
# ~10-30x slower than native): tandem_port_tests (CMakeLists.txt), i.e. the kernel suites (every Arm kernel against its scalar reference
# on random inputs with odd sizes, the Arm tiers' bit-equality, the dispatcher, and the scalar
# kernels that run unchanged on Arm), the quantisation formats (ggml's bit-exact blocks), and the
# golden-logits tests (every golden file against llama.cpp's logits through the whole model on
# that tier). Not here: the serving, HTTP, grammar, agent and tokenizer suites, which hold no
# architecture-dependent code beyond what these reach and run their models on the same kernels;
# the server itself is exercised once per tier by the smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
qemu=$(command -v qemu-aarch64-static) || { echo "FAILED: qemu-aarch64-static not found"; exit 1; }

echo "== Arm64 cross build (tests and tandem-server)"
cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DTANDEM_BENCH=OFF >/dev/null
ninja -C build-arm64 -j"$JOBS" tandem_port_tests tandem-server

for model in cortex-a53:neon cortex-a76:dotprod max:i8mm; do
  cpu=${model%%:*} tier=${model##*:}
  echo "== Arm64 tests under qemu -cpu $cpu (tier $tier)"
  TANDEM_EXPECT_TIER=$tier "$qemu" -cpu "$cpu" -L /usr/aarch64-linux-gnu build-arm64/tandem_port_tests --gtest_brief=1
done

bash scripts/arm64-smoke.sh build build-arm64
