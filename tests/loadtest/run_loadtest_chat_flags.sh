#!/bin/bash
# `tandem-loadtest`'s chat flags (and --rounds, --warmups) refuse what they cannot do, before sending
# anything: each bad combination must exit non-zero with an error naming its
# flag (or file:line). No server is needed, none is contacted: the URL's port
# is 1, where nothing listens.
# usage: run_loadtest_chat_flags.sh TANDEM_LOADTEST SOURCE_DIR WORK_DIR
set -uo pipefail
loadtest=$1 source=$2 work=$3
mkdir -p "$work"
sample="$source/tools/loadtest/sample_conversations.jsonl"
failures=0

# expect_refusal TEXT ARGS...: the run must fail and its stderr must hold TEXT.
expect_refusal() {
  local text=$1
  shift
  local err
  if err=$("$loadtest" --url http://127.0.0.1:1 --no-metrics --quiet "$@" 2>&1 >/dev/null); then
    echo "FAIL: accepted: $*"
    failures=$((failures + 1))
  elif [[ "$err" != *"$text"* ]]; then
    echo "FAIL: $*: expected an error with '$text', got: $err"
    failures=$((failures + 1))
  fi
}

expect_refusal "--endpoint" --endpoint chatty --concurrency 1
expect_refusal "--conversations needs --endpoint chat" --conversations "$sample" --concurrency 1
expect_refusal "not --rate" --endpoint chat --conversations "$sample" --rate 2
expect_refusal "--max-turns" --endpoint chat --max-turns 2 --concurrency 1
expect_refusal "--history" --endpoint chat --conversations "$sample" --history replay --concurrency 1
expect_refusal "not both" --endpoint chat --conversations "$sample" --prompts "$sample" --concurrency 1
expect_refusal "--output-tokens" --endpoint chat --conversations "$sample" --output-tokens 0 --concurrency 1
expect_refusal "--rounds must be 1 to 1000, got 0" --concurrency 1 --rounds 0
expect_refusal "--rounds must be 1 to 1000, got 1001" --concurrency 1 --rounds 1001
expect_refusal "--warmups must be 0 to 100000, got -1" --concurrency 1 --warmups -1
expect_refusal "does not go with --conversations" --endpoint chat --conversations "$sample" \
  --warmups 2 --concurrency 1
printf '%s\n' '{"messages": [{"role": "user", "content": "fine"}]}' \
  '{"conversations": [{"from": "robot", "value": "x"}]}' >"$work/bad.jsonl"
expect_refusal "$work/bad.jsonl:2: \"conversations\"[0].from is \"robot\"" \
  --endpoint chat --conversations "$work/bad.jsonl" --concurrency 1

if ((failures > 0)); then exit 1; fi
echo "loadtest chat flags: all checks passed"
