#!/bin/bash
# The testbed leaves nothing behind, even when a test fails: no network
# namespace, no mount under /run/$TB-testbed, none of the job's processes
# (mpirun, orted, the ranks). failing_testbed_job.sh brings it up and
# starts a job across four hosts, then
#   1. exits 1, as a failing test does: its own exit trap takes all down;
#   2. is killed with SIGKILL (no trap runs, so the namespaces and the job
#      are still there, which is checked first): `testbed.sh down` removes
#      them;
#   3. the same, then `testbed.sh up 2`: the next testbed starts clean (the
#      old job and the old hosts 3 and 4 are gone), and its `down` too.
# usage: run_testbed_cleanup.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source tests/support/testbed_job.sh
source tests/support/testbed_leftovers.sh
failing_job=tests/cluster/multihost/failing_testbed_job.sh

if ! why=$("$TESTBED" check 2>&1); then echo "SKIP: $why"; exit 77; fi
trap '"$TESTBED" down >/dev/null 2>&1 || true' EXIT  # whatever goes wrong here

# The scripts' output goes to a file, not to ctest: a process they leave
# behind would hold ctest's pipe open, and the test would hang instead of
# failing with what was left.
# 1. A script that fails.
status=0
"$failing_job" "$tandem" "$source" "$work" fail failed >"$work/failed.out" 2>&1 || status=$?
cat "$work/failed.out"
[ $status -eq 1 ] || { echo "the failing script exited $status, not 1"; exit 1; }
assert_testbed_gone "$work/failed.processes"

# killed NAME: failing_testbed_job.sh killed with SIGKILL once its job runs;
# what it started must still be there.
killed() {
  rm -f "$work/$1.ready"
  "$failing_job" "$tandem" "$source" "$work" hang "$1" >"$work/$1.out" 2>&1 &
  local script=$!
  for _ in $(seq 1 900); do
    [ -e "$work/$1.ready" ] && break
    kill -0 $script 2>/dev/null || { echo "$1: the script ended before its job ran"; exit 1; }
    sleep 0.1
  done
  [ -e "$work/$1.ready" ] || { echo "$1: the job did not start within 90 s"; exit 1; }
  kill -KILL $script
  wait $script 2>/dev/null || true
  cat "$work/$1.out"
  if [ -z "$(recorded_processes_alive "$work/$1.processes")" ] ||
     ! ip netns list 2>/dev/null | grep -q "^$TB-h4\b"; then
    echo "$1: SIGKILL left nothing behind, so this test proves nothing"; exit 1
  fi
  echo "$1: killed; left behind $(recorded_processes_alive "$work/$1.processes" | wc -l) processes and the hosts"
}

# 2. A killed script, then `down`.
killed killed-then-down
"$TESTBED" down
assert_testbed_gone "$work/killed-then-down.processes"

# 3. A killed script, then the next `up`.
killed killed-then-up
"$TESTBED" up 2
left=$(recorded_processes_alive "$work/killed-then-up.processes")
[ -z "$left" ] || { echo "testbed.sh up left the last testbed's processes running:"; echo "$left"; exit 1; }
hosts=$("$TESTBED" hosts | awk '{print $1}' | paste -sd' ')
namespaces=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$TB-" | sort | paste -sd' ')
[ "$hosts" = "$TB-h1 $TB-h2" ] && [ "$namespaces" = "$TB-bridge $TB-h1 $TB-h2" ] ||
  { echo "after up 2: hosts '$hosts', namespaces '$namespaces'"; exit 1; }
echo "killed-then-up: the next up started clean ($hosts)"
"$TESTBED" down
assert_testbed_gone "$work/killed-then-up.processes"
