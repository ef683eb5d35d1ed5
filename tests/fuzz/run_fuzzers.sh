#!/usr/bin/env bash
# Runs every fuzzer for SECONDS on its seed corpus, which is read, never
# written: what a run finds goes to a scratch directory. Fails when any
# fuzzer reports something (a crash, a sanitizer report, a broken property,
# a leak, a timeout); its input is saved in that fuzzer's scratch directory
# and the report names it.
#
# Usage: run_fuzzers.sh BUILD_DIR SECONDS [FUZZER...]   (default: all)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
seconds="$2"
shift 2
fuzzers=("$@")
if [ ${#fuzzers[@]} -eq 0 ]; then
  fuzzers=(http_request completion_request chat_request tokenizer safetensors
           deployment_config wire_messages jinja)
fi
scratch="$build/fuzz-runs"
failed=()
for name in "${fuzzers[@]}"; do
  work="$scratch/$name"
  rm -rf "$work" && mkdir -p "$work/new"
  # -timeout: one input slower than this is a finding (a hang);
  # -rss_limit_mb: so is one that needs more memory.
  "$build/${name}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=8192 -print_final_stats=1 -artifact_prefix="$work/" \
      "$work/new" "$here/corpus/$name" >"$work/log" 2>&1
  status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
  if [ $status -ne 0 ]; then
    failed+=("$name")
    echo "fuzz $name: FOUND SOMETHING (exit $status); the input and log are in $work"
    grep -E 'ERROR|SUMMARY|fuzz property broken|Test unit written' "$work/log" | head -5
  else
    echo "fuzz $name: ${runs:-?} inputs in ${seconds}s, nothing found"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzers that found something: ${failed[*]} (docs/fuzzing.md: reproducing a finding)"
  exit 1
fi
