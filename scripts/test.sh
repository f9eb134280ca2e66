#!/usr/bin/env bash
# The whole test suite, as CI runs it, on a fresh Debian 12 machine:
#   1. install missing packages (with the policy trainer's, python3-torch and OpenBLAS: its tests
#      train a tiny model and compare its export with Tandem's logits, tools/train)
#   2. Release build + every test (ctest)
#   3. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   4. the concurrency tests under ThreadSanitizer
#   5. Arm64: the static cross build, the kernel and golden-logits tests under qemu-user once per
#      Arm tier (i8mm, dotprod, neon; the selection and why: scripts/arm64-tests.sh), and the
#      server smoke test on every tier against x86 (TANDEM_ARM64_CI=0 skips the step)
#   6. the GGUF reader fuzzer (libFuzzer, clang) for FUZZ_SECONDS (default 60), then the grammar
#      fuzzer (GBNF and JSON Schema) and the image fuzzer (decoding, preprocessing) for as long
# Golden-data tests read ../shared/golden when present and skip visibly otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
arm64=${TANDEM_ARM64_CI:-1}
if [ "$arm64" = 1 ]; then bash scripts/install-deps.sh --arm64 --train; else bash scripts/install-deps.sh --train; fi
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths relative to the checkout in ccache's keys: a clone in another folder (CI's) hits the
# objects a build in this one left.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

echo "== release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$JOBS"
ctest --test-dir build -j"$JOBS" --output-on-failure

echo "== ASan + UBSan build and tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=ON -DTANDEM_BENCH=OFF >/dev/null
ninja -C build-asan -j"$JOBS"
# Every test except the two whole-trace replay-model acceptance tests (61 requests x 6
# configurations against the servers, ~150 s in release; every policy against the engine, ~60 s
# in release and ~500 s under ASan on a 2-core AVX2 machine, the longest item of a CI run); the
# same engine/server/simulator code runs under ASan in the shorter replay-model and server tests.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j"$JOBS" --output-on-failure \
  -E "^(ReplayModelVsServer[.]|ReplayModel[.]EqualsTheEngineForEveryPolicy$)"

echo "== ThreadSanitizer: thread pool and resource governor"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_TSAN=ON -DTANDEM_BENCH=OFF >/dev/null
ninja -C build-tsan -j"$JOBS" tandem_runtime_tests
TSAN_OPTIONS=halt_on_error=1 ./build-tsan/tandem_runtime_tests

if [ "$arm64" = 1 ]; then
  echo "== Arm64: static cross build, tests under qemu per tier, server smoke test"
  JOBS=$JOBS bash scripts/arm64-tests.sh
else
  echo "== Arm64: skipped (TANDEM_ARM64_CI=0)"
fi

echo "== GGUF reader fuzzing"
bash fuzz/run_gguf_fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== grammar fuzzing (GBNF, JSON Schema)"
bash fuzz/run_grammar_fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== image fuzzing (decoding, preprocessing)"
bash fuzz/run_image_fuzz.sh "${FUZZ_SECONDS:-60}"
