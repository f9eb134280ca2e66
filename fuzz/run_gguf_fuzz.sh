#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, libFuzzer + ASan + UBSan) and runs it.
# Usage: fuzz/run_gguf_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout; the offending input is left
# in build-san/gguf-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
SHARED=${TANDEM_SHARED_DIR:-$ROOT/../shared}
fuzz_setup gguf gguf_reader_fuzz gguf_seed_writer
"$BUILD/gguf_seed_writer" "$SEEDS"
# The start of a real model (header, the whole tokenizer metadata, some tensor infos): truncated,
# so invalid, but it steers the fuzzer through real-world metadata.
for m in "$SHARED"/golden/models/qwen35-golden-a-Q4_K_M.gguf "$SHARED"/golden/models/qwen35-golden-b-Q8_0.gguf; do
  if [[ -f $m ]]; then head -c 65536 "$m" >"$SEEDS/head-$(basename "$m")"; fi
done

echo "fuzzing for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
fuzz_run gguf_reader_fuzz "$SECONDS_TO_RUN" 70000
