#!/bin/bash
# A rank lost while the coordinator shuts down gracefully (mpirun sends
# SIGTERM when a host's daemon dies): with target shard 1 (rank 3) stopped
# by SIGSTOP and a request in flight, SIGTERM to rank 0 lets the request
# end at the step timeout with 503 naming the rank and host, and the job
# then ends non-zero with a line naming them (it must not wait in
# MPI_Finalize for the lost rank: that would hang).
# usage: run_lost_rank_at_shutdown.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
sed -e "s/^  step_timeout_seconds: .*/  step_timeout_seconds: 2/" configs/cluster-cpu.yaml \
  >"$work/cluster.yaml"
log="$work/server.log"
TANDEM_CONFIG="$work/cluster.yaml" TANDEM_RANKS=4 start_tandem_server "$tandem" "$log"
lost="rank 3 (target shard 1 of 2, on host $(hostname))"

body='{"model": "tandem", "prompt": "The history of", "max_tokens": 8, "temperature": 0}'
kill -STOP "$(rank_pid 3)"
curl -s -o "$work/response.json" -w '%{http_code}' --max-time 30 \
  "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d "$body" \
  >"$work/code" &
client=$!
for _ in $(seq 1 100); do  # until the request is in its step, waiting for rank 3
  curl -s "http://127.0.0.1:$port/metrics" | grep -Eq '^tandem_num_requests_(running|waiting)\{.*\} 1$' && break
  sleep 0.05
done
kill -TERM "$(rank_pid 0)"
wait $client || true

status=0
for _ in $(seq 1 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then cat "$log"; echo "the job still runs 20 s after SIGTERM"; exit 1; fi
wait $pid || status=$?
trap - EXIT
[ "$(cat "$work/code")" = 503 ] && [ -s "$work/response.json" ] ||
  { cat "$log"; echo "expected a 503 answer, got status $(cat "$work/code")"; exit 1; }
cat "$work/response.json"; echo
grep -qF "$lost" "$work/response.json"
[ $status -ne 0 ] || { cat "$log"; echo "the job exited 0 after losing a rank"; exit 1; }
grep -qF "tandem: $lost did not acknowledge" "$log"
grep "SIGTERM: shutting down gracefully" "$log" >/dev/null
grep -F "$lost" "$log" | grep "; stopping the job" >/dev/null || { cat "$log"; echo "no line ends the job naming $lost"; exit 1; }
echo "lost rank at shutdown: 503, job exit $status"
