#!/usr/bin/env bash
# The official OpenAI Node SDK (npm "openai") against tandem-server (ctest: http_openai_sdk_npm).
#
#   bash tests/http/run_openai_sdk_test.sh BUILD_DIR
#
# Installs package.json's packages into BUILD_DIR/http-npm (when missing), generates the tiny
# model, starts BUILD_DIR/tandem-server on a free loopback port with an API key, and runs
# openai_sdk_test.js (a non-streaming and a streaming chat completion, errors, a screenshot step
# with the tiny random mmproj); then one server per tool-call family (the tiny model with Qwen3.5's,
# Qwen3's, Granite-4.0's and LFM2's chat templates) and --spec on for openai_sdk_tools_test.js (tool calls, tool_choice, a tool-result
# round trip). The servers are stopped however the script ends.
#
# Without node/npm (or network for the first install) it prints SKIPPED and exits 77, which ctest
# reports as skipped; with CI=true it fails instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run_openai_sdk_test.sh BUILD_DIR}" && pwd)
work="$build/http-npm"

unavailable() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAILED: $1 (CI=true: the OpenAI SDK test must run in CI)"
    exit 1
  fi
  echo "SKIPPED: $1"
  exit 77
}
command -v node >/dev/null 2>&1 || unavailable "node not found (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || unavailable "npm not found (Debian: apt-get install npm)"
for tool in tandem-gen-model tandem-server; do
  [ -x "$build/$tool" ] || { echo "FAILED: $build/$tool is missing (build it first)"; exit 1; }
done

mkdir -p "$work"
if ! cmp -s "$here/package.json" "$work/package.json" || [ ! -f "$work/node_modules/openai/package.json" ]; then
  cp "$here/package.json" "$work/package.json"
  echo "== npm install (into $work)"
  (cd "$work" && npm install --no-audit --no-fund --loglevel=error) ||
    unavailable "npm install failed (no access to the npm registry?)"
fi
export NODE_PATH="$work/node_modules"

model="$work/tiny-f32.gguf"
if [ ! -f "$model" ] || [ "$build/tandem-gen-model" -nt "$model" ]; then
  "$build/tandem-gen-model" --preset tiny --type F32 --threads 2 -o "$model" >/dev/null
fi

mmproj="$work/tiny-mmproj-f32.gguf"  # the tiny tower: rows of the tiny model's width
if [ ! -f "$mmproj" ] || [ "$build/tandem-gen-model" -nt "$mmproj" ]; then
  "$build/tandem-gen-model" --mmproj --preset tiny --type F32 -o "$mmproj" >/dev/null
fi

# One tiny model per tool-call family (issue 45): Qwen3.5's XML calls, Qwen3's and Granite-4.0's
# JSON calls, LFM2's Pythonic calls; the chat template decides the family.
families="qwen3.5:templates/qwen3.5.jinja qwen3:jinja/qwen3.jinja granite-4.0:templates/granite-4.0.jinja lfm2:templates/lfm2.jinja"
for fam in $families; do
  name=${fam%%:*} tmpl="$here/../text/${fam#*:}"
  fmodel="$work/tiny-$name-template-f32.gguf"
  if [ ! -f "$fmodel" ] || [ "$build/tandem-gen-model" -nt "$fmodel" ] || [ "$tmpl" -nt "$fmodel" ]; then
    "$build/tandem-gen-model" --preset tiny --type F32 --threads 2 --chat-template "$tmpl" -o "$fmodel" >/dev/null
  fi
done

key="sdk-test-key"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

# start_server LOG ARGS...: starts tandem-server on a free loopback port; sets $port.
start_server() {
  local log=$1
  shift
  "$build/tandem-server" --host 127.0.0.1 --port 0 --api-key "$key" --threads 2 "$@" > "$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  port=""
  for _ in $(seq 1 300); do  # up to 30 s (slower under sanitizers)
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "FAILED: tandem-server exited:"; cat "$log"; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAILED: tandem-server did not report its port:"; cat "$log"; exit 1; }
}

log="$work/server.log"
start_server "$log" -m "$model" --ctx-size 1024 --mmproj "$mmproj" --image-max-tokens 16 --log-requests "$work/requests.jsonl"
echo "== tandem-server on port $port"
status=0
timeout 180 node "$here/openai_sdk_test.js" "http://127.0.0.1:$port/v1" "$key" || status=$?

# Tools (issue 45): the tiny model with each family's chat template, speculating, so that the
# grammar's forced drafts are in play.
for fam in $families; do
  [ "$status" -eq 0 ] || break
  name=${fam%%:*}
  log="$work/server-tools-$name.log"
  start_server "$log" -m "$work/tiny-$name-template-f32.gguf" --ctx-size 4096 --spec on  # the tools' system prompt: ~1000 byte-level tokens
  echo "== tandem-server ($name template, --spec on) on port $port"
  timeout 180 node "$here/openai_sdk_tools_test.js" "http://127.0.0.1:$port/v1" "$key" || status=$?
  cleanup
  pids=()
done
cleanup
trap - EXIT
if [ "$status" -ne 0 ]; then
  echo "FAILED (server log: $log)"
  tail -n 20 "$log"
  exit 1
fi
echo "PASSED"
