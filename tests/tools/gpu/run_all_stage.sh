#!/usr/bin/env bash
# tools/gpu/gpu_checks.sh all on this machine (no GPU), in a build folder of
# its own (TANDEM_GPU_BUILD) that links to the real tandem, tandem-bench and
# tandem-loadtest:
#   - every stage after prepare leaves its verdict in verdicts.txt, the
#     benchmarks and bench_serve NO DEVICE, and $OUT ends up holding
#     verdicts.txt, summary.txt and logs.tgz (the logs folder, every
#     stage's log in it) and no single stage log;
#   - with TANDEM_DEADLINE already past, every stage says it was not
#     started (the sanitizers: or that their tool is missing), bench_serve
#     is left out, and the summary says NOT RUN for it.
# usage: run_all_stage.sh TANDEM TANDEM_BENCH TANDEM_LOADTEST SOURCE_DIR
set -euo pipefail
source=$4
work=$(mktemp -d)
trap 'pkill -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $1"; exit 1; }

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is present: this test of the stage without one does not apply"
  exit 0
fi

# shellcheck source=tests/tools/gpu/stage_build.sh
source "$(dirname "$0")/stage_build.sh"
fresh_build() {
  stage_build "$work" "$1" "$2" "$3"
  rm -rf "$work/out"
  mkdir -p "$work/out"
}
export OUT=$work/out
checks=$source/tools/gpu/gpu_checks.sh
stages=(twins bench_forward bench_steps bench_steps_untiled memcheck reference engine graphs
  server_1 server_2 server_3 bench_batching racecheck bench_serve)

fresh_build "$1" "$2" "$3"
out=$("$checks" all 600) || true
echo "$out"
verdicts=$work/build/logs/verdicts.txt
for stage in "${stages[@]}"; do
  grep -q "^$stage: " "$verdicts" || fail "no verdict for $stage"
done
for stage in bench_forward bench_steps bench_steps_untiled bench_batching bench_serve; do
  grep -q "^$stage: NO DEVICE" "$verdicts" || fail "$stage: $(grep "^$stage: " "$verdicts")"
done
[[ $(cd "$OUT" && ls | sort | paste -sd ' ') == "logs.tgz summary.txt verdicts.txt" ]] ||
  fail "\$OUT holds: $(ls "$OUT")"
listing=$(tar tzf "$OUT/logs.tgz")
for stage in "${stages[@]}"; do
  grep -qx "logs/$stage.log" <<<"$listing" || fail "logs.tgz lacks logs/$stage.log"
done
grep -qx "logs/summary.txt" <<<"$listing" || fail "logs.tgz lacks logs/summary.txt"
cmp -s "$OUT/verdicts.txt" "$verdicts" || fail "\$OUT/verdicts.txt is not the last verdicts"

fresh_build "$1" "$2" "$3"
out=$(TANDEM_DEADLINE=$(date +%s) "$checks" all) || true
echo "$out"
# (Where compute-sanitizer is missing, the sanitizers say so first.)
for stage in "${stages[@]::${#stages[@]}-1}"; do
  grep -qE "^$stage: (TIMEOUT, not started|NO TOOL)" "$verdicts" ||
    fail "with no time left, $stage: $(grep "^$stage: " "$verdicts" || echo 'no verdict')"
done
! grep -q "^bench_serve: " "$verdicts" || fail "bench_serve ran with no time left"
grep -q "bench_serve: NOT RUN" "$OUT/summary.txt" || fail "the summary does not say bench_serve did not run"
echo "gpu_checks.sh all: OK"
