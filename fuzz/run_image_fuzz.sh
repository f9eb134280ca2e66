#!/usr/bin/env bash
# Builds the image fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on small valid images
# (PNG, BMP, TGA, JPEG, HDR written by fuzz/image_seed_writer.cpp with stb_image_write; PPM, PGM and
# GIF by hand) plus the golden PNGs when ../shared is there. Usage: fuzz/run_image_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout; the input is left in
# build-san/image-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-san}

# The sanitizer stage's clang tree (CMakeLists.txt: TANDEM_SANITIZE with clang builds the fuzzers);
# fuzz/run_all.sh builds every target first and sets FUZZ_PREBUILT=1.
if [ "${FUZZ_PREBUILT:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTANDEM_SANITIZE=ON -DTANDEM_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$BUILD" -j"${JOBS:-2}" image_fuzz image_seed_writer
fi

CORPUS=$BUILD/image-corpus
SEEDS=$BUILD/image-seeds
ARTIFACTS=$BUILD/image-artifacts
mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"
# Seeds: byte 0 = the budget selector, then the file.
"$BUILD/image_seed_writer" "$SEEDS"
for f in "$ROOT"/../shared/golden-vision/*.png; do
  [[ -f $f ]] && { printf '\x08'; cat "$f"; } >"$SEEDS/golden-$(basename "$f")"
done

echo "fuzzing image decoding and preprocessing for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$BUILD/image_fuzz" "$CORPUS" "$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -detect_leaks=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
echo "image_fuzz: no crash in ${SECONDS_TO_RUN}s"
