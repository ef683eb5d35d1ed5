#!/bin/bash
# `tandem-soak` against `tandem serve`: SOAK_SECONDS (default 60) of mixed
# traffic must pass (no unexpected answer, no 5xx but the documented 504,
# RSS within 5% of its after-warm-up value, /health within 2 s every
# second, the server idle again afterwards), and its JSON must show that
# every kind of request was sent and answered as documented.
# The deployment is TANDEM_CONFIG (default configs/local.yaml) with three
# keys changed so that the soak reaches the server's limits: a 1 s request
# deadline (the long requests time out), 4 running sessions and 16 queued
# (bursts of 32 get 429). With TANDEM_RANKS (start_tandem_server.sh) it is
# an MPI job and every rank's RSS is watched.
# usage: run_soak.sh TANDEM_BINARY SOURCE_DIR WORK_DIR, with TANDEM_SOAK the
# tandem-soak binary (default: the one next to TANDEM_BINARY).
set -euo pipefail
tandem=$1 source=$2 work=$3
soak=${TANDEM_SOAK:-$(dirname "$tandem")/tandem-soak}
seconds=${SOAK_SECONDS:-60}
mkdir -p "$work"
cd "$source"
config="$work/soak.yaml"
sed -e 's/^\(  request_timeout_seconds:\) *[0-9.]* /\1 1 /' \
    -e 's/^\(  max_running_sessions:\) *[0-9]* /\1 4 /' \
    -e 's/^\(  max_queued_requests:\) *[0-9]* /\1 16 /' \
    "${TANDEM_CONFIG:-configs/local.yaml}" >"$config"
for key in "request_timeout_seconds: 1 " "max_running_sessions: 4 " "max_queued_requests: 16 "; do
  grep -q "^  $key" "$config" || { echo "run_soak.sh: could not set $key in $config"; exit 1; }
done
export TANDEM_CONFIG=$config
source "$source/tests/support/start_tandem_server.sh"
start_tandem_server "$tandem" "$work/server.log"

# The processes are found from the port (every rank of an MPI job).
"$soak" --url "http://127.0.0.1:$port" --duration "$seconds" --burst-size 32 \
  --json "$work/soak.json" | tee "$work/soak.txt"

/usr/bin/python3 - "$work/soak.json" "${TANDEM_RANKS:-1}" "$seconds" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
ranks, seconds = int(sys.argv[2]), float(sys.argv[3])
assert report["pass"] and not report["failures"], report["failures"]
kinds = report["requests"]["by_kind"]
for name, counts in kinds.items():
    assert counts["sent"] > 0, f"no {name} request was sent"
    assert counts["unexpected"] == 0 and counts["unexpected_5xx"] == 0, (name, counts)
for name in ["bad_json", "bad_parameter", "unknown_route"]:
    assert set(kinds[name]["classes"]) == {"4xx"}, (name, kinds[name])
for name in ["completion", "completion_stream", "chat", "chat_stream"]:
    assert kinds[name]["statuses"].get("200", 0) > 0, (name, kinds[name])
assert kinds["disconnect"]["disconnected"] > 0, kinds["disconnect"]
# Every rank watched, each from before the warm-up to after the traffic.
assert len(report["rss"]) == ranks, report["rss"]
for process in report["rss"]:
    assert process["warm_at"] >= report["config"]["warmup_seconds"], process
    assert process["end_at"] >= report["traffic_seconds"], process
    assert process["growth_percent"] < 5, process
health = report["health"]
assert health["probes"] >= 0.8 * seconds and health["failures"] == 0, health
assert health["worst_seconds"] <= 2, health
after = report["after_traffic"]
assert after["idle"], after
assert all(value == 0 for value in after["metrics"].values()) and len(after["metrics"]) == 4, after
print("soak: all checks passed")
PY

stop_gracefully
wait $pid
trap - EXIT
