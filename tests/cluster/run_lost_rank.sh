#!/bin/bash
# A rank that hangs must not hang the server: with target shard 1 (rank 3)
# stopped by SIGSTOP, the next request fails with 503 naming the rank, and
# the job ends with a non-zero exit and a message naming it.
# usage: run_lost_rank.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
sed -e "s/^  step_timeout_seconds: .*/  step_timeout_seconds: 2/" configs/cluster-cpu.yaml \
  >"$work/cluster.yaml"
log="$work/server.log"
TANDEM_CONFIG="$work/cluster.yaml" TANDEM_RANKS=4 start_tandem_server "$tandem" "$log"

body='{"model": "tandem", "prompt": "The history of", "max_tokens": 8, "temperature": 0}'
curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d "$body" >/dev/null

kill -STOP "$(rank_pid 3)"
code=$(curl -s -o "$work/response.json" -w '%{http_code}' --max-time 60 \
  "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d "$body")
cat "$work/response.json"; echo
[ "$code" = 503 ] || { echo "expected 503, got $code"; cat "$log"; exit 1; }
# Every rank runs on this host: the messages name it.
lost="rank 3 (target shard 1 of 2, on host $(hostname))"
grep -qF "$lost" "$work/response.json"

status=0
for _ in $(seq 1 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then cat "$log"; echo "the job did not end"; exit 1; fi
wait $pid || status=$?
trap - EXIT
cat "$log"
[ $status -ne 0 ] || { echo "the job exited 0 after losing a rank"; exit 1; }
grep -qF "tandem: $lost did not acknowledge" "$log"
echo "lost rank: 503, job exit $status"
