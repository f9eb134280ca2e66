#!/usr/bin/env bash
# Main job. For now (the agent replay arrives with the serving issues): build Tandem,
# generate the default model (Qwen3.5-0.8B shapes, Q4_0, Q6_K embedding) and run a
# prompt through the engine, printing the top next-token ids.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"${JOBS:-2}" tandem-gen-model tandem-logits
mkdir -p build/models
model=build/models/qwen35-0.8b-Q4_0.gguf
[ -f "$model" ] || ./build/tandem-gen-model --preset 0.8b --type Q4_0 -o "$model"
./build/tandem-logits -m "$model" --tokens 1,2,3,4,5,6,7,8
