# Sourced after tests/support/testbed_job.sh by the multihost tests that
# check the testbed leaves nothing behind (tools/cluster/testbed.sh down).
#
#   testbed_record_processes FILE [PID...]
#                         FILE: every process now inside a testbed host
#                         (mpirun, orted, the ranks), and the PIDs given,
#                         one "PID STARTTIME COMMAND" a line
#   recorded_processes_alive FILE
#                         prints those of FILE's processes still running
#   assert_testbed_gone FILE
#                         no network namespace of the testbed ($TB-hN,
#                         $TB-bridge), no /run/$TB-testbed and no mount
#                         under it or of its namespaces, none of FILE's
#                         processes alive; says what is left and returns 1
#                         otherwise
#
# Processes are told apart by their start time as well as their id, so an
# id the kernel has handed to a new process since does not count. Only the
# recorded ones are looked for, not every `tandem` or `orted` on the
# machine: other tests (and other testbeds, TANDEM_TESTBED_NAME) may run
# their own at the same time.

# process_start_time PID: field 22 of /proc/PID/stat (counted after the ")"
# that ends the name), or nothing if PID has ended. A zombie has ended: it
# waits only for its parent (often init, once the testbed's processes are
# orphans) to collect its exit status.
process_start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  echo "$stat" | awk '$1 != "Z" && $1 != "X" {print $20}'
}

testbed_record_processes() {
  local file=$1 host candidate start
  shift
  : >"$file"
  for candidate in $(for host in $("$TESTBED" hosts | awk '{print $1}'); do ip netns pids "$host"; done) "$@"; do
    start=$(process_start_time "$candidate" || true)
    [ -n "$start" ] || continue
    echo "$candidate $start $(cat "/proc/$candidate/comm" 2>/dev/null)" >>"$file"
  done
  [ -s "$file" ] || { echo "testbed_record_processes: no process inside the testbed"; return 1; }
}

recorded_processes_alive() {
  local pid start command
  while read -r pid start command; do
    if [ "$(process_start_time "$pid" || true)" = "$start" ]; then echo "process $pid ($command)"; fi
  done <"$1"
}

assert_testbed_gone() {
  local left
  left=$(
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$TB-(h[0-9]+|bridge)$" | sed 's/^/namespace /' || true
    if [ -e "/run/$TB-testbed" ]; then echo "/run/$TB-testbed"; fi
    awk -v state="/run/$TB-testbed" -v netns="/run/netns/$TB-" \
      'index($5, state) == 1 || index($5, netns) == 1 {print "mount " $5}' /proc/self/mountinfo
    recorded_processes_alive "$1"
  )
  if [ -n "$left" ]; then
    echo "the testbed left behind:"
    echo "$left"
    return 1
  fi
  echo "testbed $TB gone: no namespace, no mount, none of the $(wc -l <"$1") processes it ran"
}
