# Sourced by the end-to-end test scripts: start_tandem_server TANDEM LOG
# starts `tandem serve` (any free port; run from the repository root) and
# waits until it is ready. Sets $pid (the server, or mpirun) and $port; a
# trap stops it if the script exits early.
#
# TANDEM_CONFIG (default configs/local.yaml) picks the deployment and
# TANDEM_RANKS, when set, runs it as an MPI job of that many processes on
# this machine (rank_pid then finds each rank's process).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1  # more ranks than cores is fine for tests

stop_tandem_server() {
  kill -TERM $pid 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 $pid 2>/dev/null || return 0; sleep 0.1; done
  pkill -9 -P $pid 2>/dev/null || true
  kill -9 $pid 2>/dev/null || true
}

start_tandem_server() {
  local tandem=$1 log=$2
  local config=${TANDEM_CONFIG:-configs/local.yaml}
  # Emptied here, not by the launch's redirection: that happens in the
  # background child, and the loop below could read the last run's log
  # (its "ready" and its port) before the child has opened the file.
  : >"$log"
  if [ -n "${TANDEM_RANKS:-}" ]; then
    mpirun -np "$TANDEM_RANKS" "$tandem" serve --config "$config" --port 0 2>"$log" &
  else
    "$tandem" serve --config "$config" --port 0 2>"$log" &
  fi
  pid=$!
  trap stop_tandem_server EXIT
  port=""
  for _ in $(seq 1 900); do
    # Both lines: under mpirun, rank 0's lines reach the log through the
    # launcher and may come later than another check of it expects.
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -n 1)
    if [ -n "$port" ] && grep -q "tandem: ready" "$log"; then return 0; fi
    kill -0 $pid 2>/dev/null || { cat "$log"; return 1; }
    sleep 0.1
  done
  echo "server did not become ready"
  cat "$log"
  return 1
}

# stop_gracefully: SIGTERM to the server, or in an MPI job to its rank 0
# (mpirun, when signalled itself, kills the ranks without waiting).
stop_gracefully() {
  if [ -n "${TANDEM_RANKS:-}" ]; then kill -TERM "$(rank_pid 0)"; else kill -TERM $pid; fi
}

# rank_pid RANK: the process of that rank of the MPI job started above.
rank_pid() {
  local child
  for child in $(pgrep -P $pid); do
    if grep -qx "OMPI_COMM_WORLD_RANK=$1" < <(tr '\0' '\n' </proc/$child/environ 2>/dev/null); then
      echo $child
      return 0
    fi
  done
  return 1
}
