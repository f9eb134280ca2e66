#!/usr/bin/env bash
# Builds the chat-template fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on Jinja
# templates, seeded with the test templates (tests/text/jinja/, tests/text/templates/).
# Usage: fuzz/run_jinja_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout (a hang past the render limits);
# the offending input is left in build-san/jinja-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_setup jinja jinja_fuzz
for f in "$ROOT"/tests/text/jinja/*.jinja "$ROOT"/tests/text/templates/*.jinja; do
  cp "$f" "$SEEDS/$(basename "$f")"
done
# Small seeds of single constructs, so that mutations reach each quickly.
printf '%s' '{% for m in messages if m.role != "tool" %}{{ loop.index }}{{ m.content | tojson(indent=2) }}{% else %}x{% endfor %}' >"$SEEDS/loop"
printf '%s' '{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{% set ns = namespace(n=0) %}{% set ns.n = f(1) %}{{ ns.n[::-1] }}' >"$SEEDS/macro"
printf '%s' '{{ tools | map(attribute="function.name") | join(", ") }}{{ messages | selectattr("role", "eq", "user") | list | length }}' >"$SEEDS/filters"
printf '%s' '{%- if x is not defined and "a" in "abc" -%}{{ raise_exception("no " ~ 1 + 2 * 3) }}{%- endif %}' >"$SEEDS/tests"

echo "fuzzing the chat-template interpreter for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
fuzz_run jinja_fuzz "$SECONDS_TO_RUN" 16384
