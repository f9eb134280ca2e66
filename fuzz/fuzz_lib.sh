# Sourced by fuzz/run_*_fuzz.sh and fuzz/run_all.sh: what every libFuzzer runner does the same way.
# Sets ROOT (the checkout) and BUILD (the sanitizer stage's clang tree, $FUZZ_BUILD or build-san).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-san}

# fuzz_build TARGET...: configures the clang sanitizer tree (CMakeLists.txt: TANDEM_SANITIZE with
# clang builds the fuzzers) and builds the targets.
fuzz_build() {
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTANDEM_SANITIZE=ON -DTANDEM_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$BUILD" -j"${JOBS:-2}" "$@"
}

# fuzz_setup NAME TARGET...: builds the targets unless fuzz/run_all.sh already did (FUZZ_PREBUILT=1),
# then sets and makes CORPUS, SEEDS and ARTIFACTS ($BUILD/NAME-corpus, -seeds, -artifacts).
fuzz_setup() {
  local name=$1
  shift
  [ "${FUZZ_PREBUILT:-0}" = 1 ] || fuzz_build "$@"
  CORPUS=$BUILD/$name-corpus
  SEEDS=$BUILD/$name-seeds
  ARTIFACTS=$BUILD/$name-artifacts
  mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"
}

# fuzz_run FUZZER SECONDS MAX_LEN [TIMEOUT_S=10 RSS_MB=2048]: runs $BUILD/FUZZER on the corpus and
# seeds; any crash, sanitizer report, leak or timeout stops it non-zero, its input in ARTIFACTS.
fuzz_run() {
  local fuzzer=$1 seconds=$2 max_len=$3 timeout=${4:-10} rss=${5:-2048}
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$BUILD/$fuzzer" "$CORPUS" "$SEEDS" \
    -max_total_time="$seconds" -detect_leaks=1 -timeout="$timeout" -rss_limit_mb="$rss" -max_len="$max_len" \
    -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
  echo "$fuzzer: no crash in ${seconds}s"
}
