#!/bin/bash
# Starts `tandem serve` on the embedded default deployment (any free port),
# runs the official openai npm client against it, then stops the server with
# SIGTERM and checks that it exits 0 (graceful shutdown). With TANDEM_CONFIG
# and TANDEM_RANKS (see start_tandem_server.sh) it does the same against an
# MPI job, sending SIGTERM to rank 0: every rank must stop and exit 0.
# usage: run_openai_client.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
# The client is fetched at test time (pinned) rather than committed.
if [ ! -f "$work/node_modules/openai/package.json" ]; then
  npm install --silent --no-audit --no-fund --prefix "$work" openai@6.30.1 >/dev/null
fi
# Every openai_client*.mjs beside this script is one group of checks.
cp "$source"/tests/server/openai_client*.mjs "$work/"

log="$work/server.log"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
start_tandem_server "$tandem" "$log"

for script in "$work"/openai_client*.mjs; do
  echo "== $(basename "$script")"
  node "$script" "http://127.0.0.1:$port/v1"
done

stop_gracefully
status=0
wait $pid || status=$?
trap - EXIT
cat "$log"
[ $status -eq 0 ] || { echo "tandem serve exited $status after SIGTERM"; exit 1; }
grep -q "tandem: stopped" "$log"
if [ -n "${TANDEM_RANKS:-}" ]; then
  # -o: lines of different ranks may still share a line of the log.
  stopped=$(grep -o "rank [0-9]* ([A-Za-z0-9 ,._-]*) stopped" "$log" | wc -l)
  [ "$stopped" -eq $((TANDEM_RANKS - 1)) ] || { echo "$stopped of $((TANDEM_RANKS - 1)) workers stopped"; exit 1; }
fi
