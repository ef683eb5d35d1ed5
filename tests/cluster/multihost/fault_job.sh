# Sourced by the fault tests here (run_link_down.sh, run_killed_host.sh,
# run_lossy_link.sh): the job of configs/cluster-cpu.yaml over 4 testbed
# hosts (coordinator $TB-h1, draft $TB-h2, TP-2 target $TB-h3 and $TB-h4),
# a fault made on $TB-h4 while two requests are in flight, and the checks
# that follow every fault: how the requests ended, that mpirun ends by
# itself, that no process is left on any host. Each check has a time bound.
#
#   fault_job_start TANDEM SOURCE WORK   testbed, job, rank 3 on $TB-h4
#   fault_requests FAULT_COMMAND...      fault_client.py, report in $work/report.json
#   await_job_end BOUND                  mpirun gone within BOUND s of the fault,
#                                        non-zero, and its log names rank 3 and host
#   await_no_processes BOUND             every host empty within BOUND s more
#   take_testbed_down                    and check nothing is left of it
#
# The MCA settings are docs/cluster.md's ("Faults across hosts"): without
# the keepalives mpirun never learns that a host it cannot reach is gone
# (TCP would retry for many minutes); the sigkill timeout gives the
# coordinator, which mpirun's kill sequence signals first, time to answer
# the requests in flight with 503 before it is killed (at the step timeout,
# or 0.5 s after it when MPI holds the waiting thread: the watchdog).
source "$(dirname "${BASH_SOURCE[0]}")/../../support/testbed_job.sh"

STEP_TIMEOUT=3
# 503 within the step timeout, plus this much for a loaded CI machine.
ANSWER_MARGIN=2
LOST="rank 3 (target shard 1 of 2, on host $TB-h4)"
export OMPI_MCA_oob_tcp_keepalive_time=1 OMPI_MCA_oob_tcp_keepalive_intvl=1 \
       OMPI_MCA_oob_tcp_keepalive_probes=3 OMPI_MCA_odls_base_sigkill_timeout=$((STEP_TIMEOUT + 2))

now() { date +%s.%N; }
seconds_since() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 2))" "$1"; }
over() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$1" "$2"; }

fault_job_start() {
  tandem=$1 source=$2 work=$3
  mkdir -p "$work"
  cd "$source"
  testbed_up 4
  testbed_hostfile "$work/hosts" 1 1 1 1
  sed -e "s/^  step_timeout_seconds: .*/  step_timeout_seconds: $STEP_TIMEOUT/" \
    configs/cluster-cpu.yaml >"$work/cluster.yaml"
  start_testbed_job "$tandem" "$work/cluster.yaml" "$work/hosts" 4 "$work/log"
  [ "$(job_rank_host 3)" = "$TB-h4" ] || { echo "rank 3 is not on $TB-h4"; exit 1; }
  grep -qF "tandem: $LOST ready in" "$work/log" || { cat "$work/log"; echo "no ready line naming $LOST"; exit 1; }
}

fault_requests() {
  on_host "$TB-h1" python3 tests/cluster/multihost/fault_client.py "$port" 30 "$@" >"$work/report.json"
  fault_at=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['fault_at'])" "$work/report.json")
}

await_job_end() {
  local bound=$1
  while kill -0 "$pid" 2>/dev/null && ! over "$(seconds_since "$fault_at")" "$bound"; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    cat "$work/log"; echo "FAIL: mpirun still runs $bound s after the fault"; exit 1
  fi
  job_status=0
  wait "$pid" || job_status=$?
  job_ended=$(seconds_since "$fault_at")
  pid=""
  echo "mpirun exited $job_status, $job_ended s after the fault"
  [ "$job_status" -ne 0 ] || { cat "$work/log"; echo "FAIL: the job exited 0 after losing a host"; exit 1; }
  # The coordinator's line that fails every request in flight for the lost
  # rank, and the one that then stops the job; mpirun's SIGKILL may come
  # before the second where mpirun itself ended the job (its keepalives
  # gave up on the host's daemon first: heavy loss can do that). Or the
  # watchdog's line, when MPI held the waiting thread. (grep without -q:
  # with pipefail, an early exit would fail the greps before it.)
  grep -F "tandem: " "$work/log" | grep -F "$LOST" |
    grep -E "engine step failed, ending all [0-9]+ requests in flight|stopping the job|ending the job" >/dev/null ||
    { cat "$work/log"; echo "FAIL: no log line ends the job naming $LOST"; exit 1; }
}

processes_left() {
  local host
  for host in $("$TESTBED" hosts | awk '{print $1}'); do
    ip netns pids "$host" | while read -r p; do echo "$host: $p $(cat /proc/$p/comm 2>/dev/null)"; done
  done
}

await_no_processes() {
  local bound=$1 start
  start=$(now)
  while [ -n "$(processes_left)" ] && ! over "$(seconds_since "$start")" "$bound"; do sleep 0.1; done
  if [ -n "$(processes_left)" ]; then
    processes_left; echo "FAIL: processes left on the hosts $bound s after mpirun ended"; exit 1
  fi
  echo "every host empty $(seconds_since "$fault_at") s after the fault"
}

take_testbed_down() {
  "$TESTBED" down >/dev/null
  if ip netns list | awk '{print $1}' | grep -q "^$TB-"; then
    ip netns list; echo "FAIL: testbed namespaces left"; exit 1
  fi
  [ ! -e "/run/$TB-testbed" ] || { echo "FAIL: /run/$TB-testbed left"; exit 1; }
}
