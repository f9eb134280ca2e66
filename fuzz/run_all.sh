#!/usr/bin/env bash
# Every libFuzzer target for the same time each, two at a time (a fuzzer is one process on one
# core, and CI has two): builds the targets once in the sanitizer tree, then runs the per-target
# scripts (fuzz/run_*_fuzz.sh) with FUZZ_PREBUILT=1. Exits non-zero if any of them failed, after
# printing each one's log tail.
# Usage: fuzz/run_all.sh [seconds per target=60]
set -euo pipefail
SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
export FUZZ_BUILD=$BUILD
targets=(gguf grammar image http jinja)
fuzz_build gguf_reader_fuzz gguf_seed_writer grammar_fuzz image_fuzz image_seed_writer http_fuzz jinja_fuzz

logs=$FUZZ_BUILD/fuzz-logs
mkdir -p "$logs"
pids=()
status=0
run() {  # target -> background job, log in $logs
  FUZZ_PREBUILT=1 bash "$ROOT/fuzz/run_$1_fuzz.sh" "$SECONDS_TO_RUN" >"$logs/$1.log" 2>&1 &
  pids+=($!)
}
report() {  # target pid
  if wait "$2"; then
    echo "== $1: $(tail -n1 "$logs/$1.log")"
  else
    echo "== $1: FAILED, the end of its log ($logs/$1.log):"
    tail -n 40 "$logs/$1.log"
    status=1
  fi
}
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  run "${targets[i]}"
  [ $((i + 1)) -lt ${#targets[@]} ] && run "${targets[i + 1]}"
  report "${targets[i]}" "${pids[0]}"
  [ $((i + 1)) -lt ${#targets[@]} ] && report "${targets[i + 1]}" "${pids[1]}"
done
exit $status
