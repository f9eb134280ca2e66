#!/usr/bin/env bash
# Issue 28's benchmarks (not part of CI): LFM2-2.6B and Granite-4.0-H-Micro at their real shapes
# (generated weights, Q4_0 and Q4_K_M): prefill 512 and decode, the state bytes per checkpoint, and
# the agent trace's new prompt tokens per step under the stock policy and Tandem's (paper Table 7's
# rows), with the replay model (tandem-sim) and a cost model fitted on each model (tandem-sim
# calibrate) for the predicted step time. Usage: bash bench/hybrids.sh [BUILD_DIR] (default build).
set -euo pipefail
B=${1:-build}
M=$B/bench-models
mkdir -p "$M"
ninja -C "$B" -j2 tandem-gen-model tandem-bench tandem-gen-trace tandem-sim >/dev/null
lscpu | grep -E "Model name" || true
for preset in lfm2-2.6b granite-h-micro; do
  for type in Q4_0 Q4_K_M; do
    f=$M/$preset-$type.gguf
    [ -f "$f" ] || "$B/tandem-gen-model" --preset "$preset" --type "$type" --threads 2 -o "$f"
    echo "== $preset $type"
    "$B/tandem-bench" -m "$f" --prompt 512 --decode 16 --reps 2
  done
done
T=$M/paper-trace.jsonl
[ -f "$T" ] || "$B/tandem-gen-trace" -o "$T"
for preset in lfm2-2.6b granite-h-micro; do
  f=$M/$preset-Q4_0.gguf
  cost=$M/$preset-Q4_0.cost.json
  [ -f "$cost" ] || "$B/tandem-sim" calibrate -m "$f" -t 2 -o "$cost"
  echo "== $preset: the paper-structured trace"
  "$B/tandem-sim" -m "$f" --trace "$T" --cost "$cost" \
    --config "stock: --checkpoint-policy stock --consolidate-batches off" \
    --config "tandem: --checkpoint-policy divergence --consolidate-batches on"
done
