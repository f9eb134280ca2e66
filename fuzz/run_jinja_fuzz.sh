#!/usr/bin/env bash
# Builds the chat-template fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on Jinja
# templates, seeded with the test templates (tests/text/jinja/, tests/text/templates/).
# Usage: fuzz/run_jinja_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout (a hang past the render limits);
# the offending input is left in build-san/jinja-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-san}

# fuzz/run_all.sh builds every target first and sets FUZZ_PREBUILT=1.
if [ "${FUZZ_PREBUILT:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTANDEM_SANITIZE=ON -DTANDEM_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$BUILD" -j"${JOBS:-2}" jinja_fuzz
fi

CORPUS=$BUILD/jinja-corpus
SEEDS=$BUILD/jinja-seeds
ARTIFACTS=$BUILD/jinja-artifacts
mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"
for f in "$ROOT"/tests/text/jinja/*.jinja "$ROOT"/tests/text/templates/*.jinja; do
  cp "$f" "$SEEDS/$(basename "$f")"
done
# Small seeds of single constructs, so that mutations reach each quickly.
printf '%s' '{% for m in messages if m.role != "tool" %}{{ loop.index }}{{ m.content | tojson(indent=2) }}{% else %}x{% endfor %}' >"$SEEDS/loop"
printf '%s' '{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{% set ns = namespace(n=0) %}{% set ns.n = f(1) %}{{ ns.n[::-1] }}' >"$SEEDS/macro"
printf '%s' '{{ tools | map(attribute="function.name") | join(", ") }}{{ messages | selectattr("role", "eq", "user") | list | length }}' >"$SEEDS/filters"
printf '%s' '{%- if x is not defined and "a" in "abc" -%}{{ raise_exception("no " ~ 1 + 2 * 3) }}{%- endif %}' >"$SEEDS/tests"

echo "fuzzing the chat-template interpreter for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$BUILD/jinja_fuzz" "$CORPUS" "$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -detect_leaks=1 -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
  -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
echo "jinja_fuzz: no crash in ${SECONDS_TO_RUN}s"
