#!/usr/bin/env bash
# The Arm64 tandem-server under qemu-user answers a chat completion on loopback exactly as the
# x86 one does (issue 29's acceptance): a tiny generated Q4_0 model (so the int8 kernels run:
# SMULL / SDOT / SMMLA on the Arm tiers), one greedy /v1/chat/completions request, the answer
# compared across x86 and every Arm tier (qemu -cpu cortex-a53: neon, cortex-a76: dotprod,
# max: i8mm; each server's log must name that tier).
#
#   bash scripts/arm64-smoke.sh [X86_BUILD_DIR] [ARM64_BUILD_DIR]     (default build, build-arm64)
#
# Needs build/tandem-gen-model and build/tandem-server (x86), the static build-arm64/tandem-server, and
# qemu-user-static. Prompts are short and max_tokens 12: under emulation a tiny model's prompt
# and a dozen decode steps take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
x86=${1:-build}
arm=${2:-build-arm64}
qemu=$(command -v qemu-aarch64-static) || { echo "FAILED: qemu-aarch64-static not found (apt-get install qemu-user-static)"; exit 1; }
for f in "$x86/tandem-gen-model" "$x86/tandem-server" "$arm/tandem-server"; do
  [ -x "$f" ] || { echo "FAILED: $f is missing (build it first)"; exit 1; }
done
# The phone binary is one static file (issue 29): no program interpreter, no shared libraries.
if readelf -l "$arm/tandem-server" | grep -q 'program interpreter'; then
  echo "FAILED: $arm/tandem-server is dynamically linked (configure with -DTANDEM_STATIC=ON, scripts/arm64-tests.sh)"
  exit 1
fi
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

model="$work/tiny-q4_0.gguf"
"$x86/tandem-gen-model" --preset tiny --type Q4_0 --threads 2 -o "$model" >/dev/null
body='{"messages":[{"role":"user","content":"Open the settings and turn on dark mode."}],"max_tokens":12,"temperature":0,"logprobs":true}'

# run NAME EXPECTED_TIER COMMAND...: start a server, ask once, keep the answer's text and tokens.
run() {
  local name=$1 tier=$2
  shift 2
  local log="$work/$name.log"
  "$@" -m "$model" --host 127.0.0.1 --port 0 --ctx-size 512 --threads 2 > "$log" 2>&1 &
  pid=$!
  local port=""
  for _ in $(seq 1 600); do  # up to 60 s: loading under emulation
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "FAILED: $name: tandem-server exited:"; cat "$log"; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAILED: $name: no port reported:"; cat "$log"; exit 1; }
  grep -q "kernel tier $tier" "$log" || { echo "FAILED: $name: expected kernel tier $tier:"; cat "$log"; exit 1; }
  curl -sf --max-time 300 "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
    -d "$body" > "$work/$name.json" || { echo "FAILED: $name: request failed"; cat "$log"; exit 1; }
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=""
  # The greedy answer: its text, token count and each token's bytes (choices[0].logprobs); and,
  # apart, each token's log-probability: all Arm tiers compute the same bits (docs/arm64.md), so
  # those must agree among them to the last digit; x86's float kernels round differently.
  python3 - "$work/$name.json" "$work/$name.answer" "$work/$name.logprobs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["choices"][0]
toks = c["logprobs"]["content"]
json.dump([c["message"]["content"], r["usage"]["completion_tokens"], [t["bytes"] for t in toks]], open(sys.argv[2], "w"))
json.dump([t["logprob"] for t in toks], open(sys.argv[3], "w"))
PY
  echo "  $name ($tier): $(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(json.dumps(a[:2]))' "$work/$name.answer")"
}

echo "== Arm64 smoke: tandem-server on x86 and under qemu per Arm tier"
run x86 "" "$x86/tandem-server"
run neon neon "$qemu" -cpu cortex-a53 "$arm/tandem-server"
run dotprod dotprod "$qemu" -cpu cortex-a76 "$arm/tandem-server"
run i8mm i8mm "$qemu" -cpu max "$arm/tandem-server"
status=0
for t in neon dotprod i8mm; do
  if ! cmp -s "$work/x86.answer" "$work/$t.answer"; then
    echo "FAILED: the $t answer (tokens) differs from x86's"
    status=1
  fi
  if ! cmp -s "$work/neon.logprobs" "$work/$t.logprobs"; then
    echo "FAILED: the $t tokens' log-probabilities differ from neon's: $(cat "$work/$t.logprobs") vs $(cat "$work/neon.logprobs")"
    status=1
  fi
done
[ "$status" = 0 ] && echo "Arm64 smoke: 4 passed, 0 failed (the same greedy tokens on x86, neon, dotprod, i8mm; the same log-probabilities on the three Arm tiers)"
exit "$status"
