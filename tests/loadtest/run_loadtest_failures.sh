#!/bin/bash
# `tandem-loadtest` tells the truth about failures, against a fake server
# (fake_openai_server.py, loopback) that answers every request one way:
#  - 500s or 400s: exit status 1, the first 5 failures listed on stderr with
#    their HTTP status and the server's own message, the rest counted;
#    --allow-errors: exit 0, the failures still listed and counted;
#  - empty completions (200, no text, 0 tokens): failed, no TTFT recorded;
#  - good answers, started from another working directory without --corpus:
#    the built-in corpus is found; --ignore-eos reaches every request body;
#    --warmups sends its requests first and leaves them out of the run;
#    the plots' captions give count, date and URL; a missing --corpus is
#    named in the error;
#  - progress: none on a pipe; rate and ETA on a terminal (a pty), none
#    there with --quiet.
# Every run is bounded (8 requests, 20 s timeout).
# usage: run_loadtest_failures.sh TANDEM_LOADTEST SOURCE_DIR WORK_DIR
set -uo pipefail
loadtest=$(realpath "$1") source=$2 work=$3
rm -rf "$work"
mkdir -p "$work/elsewhere"
python=/usr/bin/python3
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

server_pid=
start_fake() {  # start_fake MODE: sets port
  rm -f "$work/port" "$work/bodies"
  "$python" "$source/tests/loadtest/fake_openai_server.py" "$1" "$work/port" "$work/bodies" &
  server_pid=$!
  for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
  port=$(cat "$work/port")
}
stop_fake() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
trap stop_fake EXIT

# run_tool ARGS...: runs the tool from $work/elsewhere against the fake;
# sets status, out (stdout) and err (stderr).
run_tool() {
  (cd "$work/elsewhere" && timeout 60 "$loadtest" --url "http://127.0.0.1:$port" --no-metrics \
    --concurrency 2 --requests 8 --input-words 8 --output-tokens 4 --timeout 20 "$@" \
    >"$work/out" 2>"$work/err")
  status=$?
  out=$(cat "$work/out") err=$(cat "$work/err")
}
expect_in() {  # expect_in WHAT TEXT NEEDLE
  [[ "$2" == *"$3"* ]] || fail "$1: expected '$3' in: $2"
}

start_fake error500
run_tool
((status == 1)) || fail "500s: exit status $status, expected 1"
expect_in "500s" "$err" "8 of 8 requests failed:"
listed=$(grep -c '^  \[run, concurrency 2\] HTTP 500: fake failure [0-9]*$' <<<"$err")
((listed == 5)) || fail "500s: $listed failures listed, expected 5: $err"
expect_in "500s" "$err" "  ... and 3 more"
expect_in "500s" "$out" "Failed requests:                        8"
[[ "$err" != *"req/s"* && "$err" != *"["#* ]] || fail "500s: progress on a pipe: $err"
run_tool --allow-errors --json "$work/allowed.json"
((status == 0)) || fail "--allow-errors: exit status $status, expected 0"
expect_in "--allow-errors" "$err" "8 of 8 requests failed:"
"$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["failed"]==8 and r["runs"][0]["summary"]["errors"]=={"500": 8}, r' \
  "$work/allowed.json" || fail "--allow-errors: JSON counts"
stop_fake

start_fake error400
run_tool
((status == 1)) || fail "400s: exit status $status, expected 1"
expect_in "400s" "$err" "HTTP 400: 'max_tokens' is too large for the fake"
stop_fake

start_fake empty
run_tool
((status == 1)) || fail "empty completions: exit status $status, expected 1"
expect_in "empty completions" "$err" "HTTP 200: empty completion"
run_tool --allow-errors --json "$work/empty.json"
((status == 0)) || fail "empty completions, --allow-errors: exit status $status"
"$python" -c '
import json, sys
s = json.load(open(sys.argv[1]))["runs"][0]["summary"]
assert s["completed"] == 0 and s["failed"] == 8, s
assert s["ttft_count"] == 0 and s["mean_ttft_ms"] == 0, s
' "$work/empty.json" || fail "empty completions: counted as completed, or a TTFT recorded"
stop_fake

start_fake ok
run_tool --ignore-eos --json "$work/ok.json" --plots "$work/plots"
((status == 0)) || fail "good answers from another directory: exit status $status: $err"
[[ -z "$err" ]] || fail "good answers: stderr not empty on a pipe: $err"
"$python" -c '
import json, sys
s = json.load(open(sys.argv[1]))["runs"][0]["summary"]
assert s["completed"] == 8 and s["failed"] == 0 and s["ttft_count"] == 8, s
bodies = [json.loads(line) for line in open(sys.argv[2])]
assert len(bodies) == 8 and all(b["ignore_eos"] is True for b in bodies), bodies
assert all(len(b["prompt"].split()) == 8 for b in bodies), bodies
' "$work/ok.json" "$work/bodies" || fail "good answers: JSON or request bodies"
caption="8 requests (0 failed), $(date -u +%Y-%m-%d)"
for chart in throughput p99_ttft p99_tpot ttft_cdf e2e_cdf; do
  svg=$(cat "$work/plots/$chart.svg")
  expect_in "$chart.svg" "$svg" "$caption"
  expect_in "$chart.svg" "$svg" "UTC, http://127.0.0.1:$port/v1/completions</text>"
done
run_tool --corpus "$work/no_such_corpus.jsonl"
((status != 0)) || fail "a missing --corpus was accepted"
expect_in "missing --corpus" "$err" "cannot open $work/no_such_corpus.jsonl"

# --warmups: 3 requests sent first, in no run's figures.
stop_fake
start_fake ok
run_tool --warmups 3 --json "$work/warm.json"
((status == 0)) || fail "--warmups: exit status $status: $err"
expect_in "--warmups" "$out" "warm-up, run: 3 requests in"
"$python" -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["runs"][0]["summary"]
assert s["completed"] == 8 and s["failed"] == 0, s
assert r["config"]["warmups"] == 3 and r["requests"] == 11 and r["failed"] == 0, r
assert sum(1 for _ in open(sys.argv[2])) == 11, "the server saw another count"
' "$work/warm.json" "$work/bodies" || fail "--warmups: JSON counts or requests sent"

# On a terminal: the progress line with rate and ETA; with --quiet, nothing.
on_tty() {  # on_tty ARGS...: the tool's stderr, read through a pty
  "$python" - "$loadtest" "http://127.0.0.1:$port" "$@" <<'PY'
import os, pty, subprocess, sys
master, slave = pty.openpty()
args = [sys.argv[1], "--url", sys.argv[2], "--no-metrics", "--concurrency", "2", "--requests", "8",
        "--input-words", "8", "--output-tokens", "4", "--timeout", "20"] + sys.argv[3:]
tool = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
seen = b""
while True:
    try:
        data = os.read(master, 4096)
    except OSError:  # the tool ended and closed the pty
        break
    if not data:
        break
    seen += data
tool.wait(timeout=60)
sys.stdout.write(seen.decode(errors="replace"))
PY
}
tty_err=$(on_tty)
expect_in "progress on a terminal" "$tty_err" "req/s  ETA"
expect_in "progress on a terminal" "$tty_err" "8/8"
tty_quiet=$(on_tty --quiet)
[[ "$tty_quiet" != *"req/s"* ]] || fail "--quiet still shows progress: $tty_quiet"
stop_fake

if ((failures > 0)); then exit 1; fi
echo "loadtest failures: all checks passed"
