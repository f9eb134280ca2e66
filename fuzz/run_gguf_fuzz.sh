#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, libFuzzer + ASan + UBSan) and runs it.
# Usage: fuzz/run_gguf_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout; the offending input is left
# in build-san/gguf-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-san}
SHARED=${TANDEM_SHARED_DIR:-$ROOT/../shared}

# The sanitizer stage's clang tree (CMakeLists.txt: TANDEM_SANITIZE with clang builds the fuzzers);
# fuzz/run_all.sh builds every target first and sets FUZZ_PREBUILT=1.
if [ "${FUZZ_PREBUILT:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTANDEM_SANITIZE=ON -DTANDEM_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$BUILD" -j"${JOBS:-2}" gguf_reader_fuzz gguf_seed_writer
fi

CORPUS=$BUILD/gguf-corpus
SEEDS=$BUILD/gguf-seeds
ARTIFACTS=$BUILD/gguf-artifacts
mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"
"$BUILD/gguf_seed_writer" "$SEEDS"
# The start of a real model (header, the whole tokenizer metadata, some tensor infos): truncated,
# so invalid, but it steers the fuzzer through real-world metadata.
for m in "$SHARED"/golden/models/qwen35-golden-a-Q4_K_M.gguf "$SHARED"/golden/models/qwen35-golden-b-Q8_0.gguf; do
  if [[ -f $m ]]; then head -c 65536 "$m" >"$SEEDS/head-$(basename "$m")"; fi
done

echo "fuzzing for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$BUILD/gguf_reader_fuzz" "$CORPUS" "$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -detect_leaks=1 -timeout=10 -rss_limit_mb=2048 -max_len=70000 \
  -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
echo "gguf_reader_fuzz: no crash in ${SECONDS_TO_RUN}s"
