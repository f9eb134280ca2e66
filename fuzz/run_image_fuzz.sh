#!/usr/bin/env bash
# Builds the image fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on small valid images
# (PNG, BMP, TGA, JPEG, HDR written by fuzz/image_seed_writer.cpp with stb_image_write; PPM, PGM and
# GIF by hand) plus the golden PNGs when ../shared is there. Usage: fuzz/run_image_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout; the input is left in
# build-san/image-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_setup image image_fuzz image_seed_writer
# Seeds: byte 0 = the budget selector, then the file.
"$BUILD/image_seed_writer" "$SEEDS"
for f in "$ROOT"/../shared/golden-vision/*.png; do
  [[ -f $f ]] && { printf '\x08'; cat "$f"; } >"$SEEDS/golden-$(basename "$f")"
done

echo "fuzzing image decoding and preprocessing for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
fuzz_run image_fuzz "$SECONDS_TO_RUN" 65536
