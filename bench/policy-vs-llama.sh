#!/usr/bin/env bash
# The trained policy's hand check against llama.cpp (issue 50): llama.cpp's llama-server loads
# models/tandem-policy.gguf unchanged, and its greedy answers to the test seeds' prompts equal
# Tandem's, while Tandem speculates (--spec on: MTP drafts through the trimmed draft head that it
# gathers at load from the file's token-id list, which llama.cpp ignores). Both servers get the same
# requests from tandem-replay; the answers are compared request by request.
# Needs a CPU build of llama.cpp from its source (outside this repository): LLAMA_CPP=its build
# directory (bin/llama-server). Environment: BUILD (default build), POLICY (default
# models/tandem-policy.gguf), SEEDS (test seeds, default 20001-20005), THREADS (default 2), PORT
# (default 18081). Writes BUILD/policy-vs-llama/; exits 1 when an answer differs.
set -euo pipefail
cd "$(dirname "$0")/.."
b=${BUILD:-build}
llama=${LLAMA_CPP:?set LLAMA_CPP to a llama.cpp build directory (bin/llama-server)}
policy=${POLICY:-models/tandem-policy.gguf}
seeds=${SEEDS:-20001-20005}
threads=${THREADS:-2}
port=${PORT:-18081}
out=$b/policy-vs-llama
mkdir -p "$out"
ninja -C "$b" -j2 tandem-gen-trace tandem-replay tandem-server >/dev/null

IFS=- read -r s0 s1 <<<"$seeds"
: >"$out/trace.jsonl"
for s in $(seq "$s0" "$s1"); do
  "$b"/tandem-gen-trace --seed "$s" -o "$out/seed-$s.jsonl" >/dev/null
  cat "$out/seed-$s.jsonl" >>"$out/trace.jsonl"
done

"$llama"/bin/llama-server -m "$policy" --port "$port" -t "$threads" -np 1 -c 4096 >"$out/llama-server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "llama-server refused $policy (see $out/llama-server.log)" >&2; exit 1; }
  sleep 0.5
done
echo "llama-server loaded $policy: $(grep -m1 -o 'model loaded.*\|print_info: file type.*' "$out/llama-server.log" || true)"

"$b"/tandem-replay --trace "$out/trace.jsonl" --model "$policy" --server-bin "$b"/tandem-server --runs 1 --out "$out" \
  --config "llama.cpp: http://127.0.0.1:$port" --config "tandem: --spec on -t $threads" >"$out/replay.txt"

/usr/bin/python3 - "$out/answers.jsonl" <<'EOF'
import json, sys
by = {}
for line in open(sys.argv[1]):
    a = json.loads(line)
    by.setdefault(a["request"], {})[a["config"]] = a
same = [r for r, c in by.items() if c["llama.cpp"]["content"] == c["tandem"]["content"]]
exact = {k: sum(1 for c in by.values() if c[k].get("exact")) for k in ("llama.cpp", "tandem")}
print("requests %d: answers identical %d; exact match: llama.cpp %d, Tandem %d"
      % (len(by), len(same), exact["llama.cpp"], exact["tandem"]))
for r, c in sorted(by.items()):
    if c["llama.cpp"]["content"] != c["tandem"]["content"]:
        print("  request %d: llama.cpp %r / Tandem %r" % (r, c["llama.cpp"]["content"], c["tandem"]["content"]))
sys.exit(0 if len(same) == len(by) else 1)
EOF
