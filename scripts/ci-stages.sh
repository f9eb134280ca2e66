# Stage timing for scripts/test.sh (sourced): run_stage NAME FUNCTION times a stage, and
# finish_stages prints every stage's wall time against its budget (scripts/ci-budgets.conf) and
# fails when one is over. A stage that fails stops the run with the table printed so far.

ci_budget_file=${CI_BUDGET_FILE:-scripts/ci-budgets.conf}
ci_scale=${TANDEM_CI_BUDGET_SCALE:-1}
ci_start=$(date +%s)
ci_names=()
ci_secs=()
ci_notes=()
# Every test command's output is also kept here, so the end of the log can say how many tests
# each stage ran (ci_tests, ci_test_counts).
ci_log_dir=${CI_LOG_DIR:-$(mktemp -d -t tandem-ci.XXXXXX)}

# The budget of a stage in minutes (empty when the file has none).
ci_budget() {
  awk -v s="$1" '$1 == s { print $2; exit }' "$ci_budget_file"
}

ci_fmt() {  # seconds -> "12.3"
  awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'
}

ci_table() {
  local over=0 i b lim total
  echo
  echo "== stage times (minutes; budgets from $ci_budget_file, scale $ci_scale)"
  printf '%-12s %8s %8s  %s\n' stage took budget verdict
  for i in "${!ci_names[@]}"; do
    b=$(ci_budget "${ci_names[$i]}")
    if [ -n "${ci_notes[$i]}" ]; then
      printf '%-12s %8s %8s  %s\n' "${ci_names[$i]}" - "${b:--}" "${ci_notes[$i]}"
      continue
    fi
    verdict=ok
    if [ -n "$b" ] && [ "$ci_scale" != 0 ]; then
      lim=$(awk -v b="$b" -v k="$ci_scale" 'BEGIN { printf "%d", b * k * 60 }')
      if [ "${ci_secs[$i]}" -gt "$lim" ]; then verdict="OVER BUDGET"; over=1; fi
    fi
    printf '%-12s %8s %8s  %s\n' "${ci_names[$i]}" "$(ci_fmt "${ci_secs[$i]}")" "${b:--}" "$verdict"
  done
  total=$(( $(date +%s) - ci_start ))
  b=$(ci_budget total)
  verdict=ok
  if [ -n "$b" ] && [ "$ci_scale" != 0 ]; then
    lim=$(awk -v b="$b" -v k="$ci_scale" 'BEGIN { printf "%d", b * k * 60 }')
    if [ "$total" -gt "$lim" ]; then verdict="OVER BUDGET"; over=1; fi
  fi
  printf '%-12s %8s %8s  %s\n' total "$(ci_fmt "$total")" "${b:--}" "$verdict"
  return $over
}

run_stage() {
  local name=$1 fn=$2 t0 status
  echo "== stage $name (budget $(ci_budget "$name") min)"
  t0=$(date +%s)
  set +e
  ( set -e; "$fn" )
  status=$?
  set -e
  ci_names+=("$name")
  ci_secs+=($(( $(date +%s) - t0 )))
  ci_notes+=("")
  echo "== stage $name: $(ci_fmt "${ci_secs[-1]}") min"
  if [ "$status" != 0 ]; then
    ci_notes[-1]="FAILED (exit $status)"
    ci_table || true
    echo "FAILED: stage $name (exit $status)"
    exit "$status"
  fi
}

skip_stage() {
  echo "== stage $1: skipped ($2)"
  ci_names+=("$1")
  ci_secs+=(0)
  ci_notes+=("skipped: $2")
}

# ci_tests LABEL COMMAND...: runs a test command with its output shown and kept for the count.
ci_tests() {
  local label=$1
  shift
  "$@" 2>&1 | tee "$ci_log_dir/$label.log"
}

# One line per test command: what ran, from ctest's and GoogleTest's own summary lines and the
# fuzzers' verdicts, and the sum.
ci_test_counts() {
  local f label run=0 failed=0 empty=0
  echo
  echo "== tests run (from each command's own summary lines)"
  for f in "$ci_log_dir"/*.log; do
    [ -e "$f" ] || continue
    label=$(basename "$f" .log)
    read -r r x <<<"$(awk '
      /tests passed, [0-9]+ tests? failed out of [0-9]+/ {
        for (i = 1; i <= NF; i++) { if ($i == "failed") f += $(i - 2); if ($i == "of") r += $(i + 1) } }
      /^\[==========\] [0-9]+ tests? from .* ran/ { r += $2 }
      /^\[  FAILED  \] [0-9]+ tests?,/ { f += $4 }
      /: no crash in / { r += 1 }
      END { printf "%d %d\n", r, f }' "$f")"
    printf '%-22s %6d run %4d failed\n' "$label" "$r" "$x"
    [ "$r" -gt 0 ] || { echo "FAILED: $label ran no test"; empty=1; }
    run=$((run + r))
    failed=$((failed + x))
  done
  printf '%-22s %6d run %4d failed\n' total "$run" "$failed"
  [ "$run" -gt 0 ] || { echo "FAILED: no test ran"; return 1; }
  [ "$empty" = 0 ] || return 1  # a command that ran nothing (e.g. a ctest label no test carries)
  # The sum in ctest's own words, for tools that read a run's last lines.
  echo "$(( (run - failed) * 100 / run ))% tests passed, $failed tests failed out of $run"
}

finish_stages() {
  ci_test_counts || exit 1
  if ! ci_table; then
    echo "FAILED: a stage took longer than its budget ($ci_budget_file; TANDEM_CI_BUDGET_SCALE scales them)"
    exit 1
  fi
  echo "all stages passed"
}
