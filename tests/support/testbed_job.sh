# Sourced by the multihost test scripts (tests/cluster/multihost/): a
# testbed of hosts (tools/cluster/testbed.sh) and `tandem serve` launched
# across it by mpirun, the way a cluster launches it, except that the
# launch agent enters a host's namespaces instead of ssh.
#
# Host names are $TB-h1.. where TB is TANDEM_TESTBED_NAME (default tandem;
# another name gives a testbed of its own, beside one already up).
#
#   testbed_up N          hosts $TB-h1..N, or exit 77 (ctest: skipped)
#                         saying why this machine cannot have them; a trap
#                         stops the job and takes the testbed down at exit,
#                         whatever the script's outcome
#   testbed_hostfile FILE SLOTS...   a hostfile: SLOTS[i] ranks on $TB-h(i+1)
#   start_testbed_job TANDEM CONFIG HOSTFILE NP LOG [LISTEN]
#                         mpirun inside $TB-h1 (rank 0, the coordinator,
#                         must be there: the server listens on its loopback,
#                         or on LISTEN, e.g. 0.0.0.0 for clients on other
#                         hosts) and waits until the server is ready. Sets
#                         $pid (mpirun, as seen from here) and $port. All
#                         the job's output goes to LOG, so that a process
#                         left behind cannot hold ctest's pipe open.
#   on_host HOST CMD...   CMD inside HOST (ssh-like: words joined for its shell)
#   job_rank_pid RANK     the process of that rank, on whichever host it runs
#   job_rank_host RANK    the testbed host running that rank
#   start_testbed_server TANDEM CONFIG LOG, stop_testbed_server
#                         one process on $TB-h1, no mpirun, started and
#                         stopped as the job is
#   stop_testbed_job      SIGTERM to rank 0 (the graceful end), then waits
#                         up to 60 s for mpirun; returns mpirun's status
#   slurm_up              munged, slurmctld and a slurmd per host
#                         (tools/cluster/testbed_daemons.sh), or exit 77 if
#                         Slurm is not installed; exports SLURM_CONF
#   on_slurm CMD...       a Slurm command (squeue, scontrol...) inside $TB-h1
#   start_slurm_job LOG SCRIPT [ARGS...]   sbatch SCRIPT from $TB-h1 and the
#                         current directory, waits until the server is ready;
#                         sets $job and $port
#   stop_slurm_job        scancel --signal=TERM, waits up to 60 s for the
#                         job to leave the queue; fails unless it COMPLETED
#                         with exit code 0
#
# Between hosts Open MPI uses TCP over eth0 only (oob and btl restricted to
# it, no shared memory), so every byte between ranks on different hosts
# crosses the network stack; ranks on one host still use shared memory.
# mpi_yield_when_idle: ranks oversubscribing the cores yield instead of
# spinning (rings are 160x slower without it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1

TB=${TANDEM_TESTBED_NAME:-tandem}
TESTBED=${TESTBED:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/cluster/testbed.sh"}
TESTBED_EXEC=$(dirname "$TESTBED")/testbed_exec.sh

testbed_cleanup() {
  local status=$?
  if [ -n "${pid:-}" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  "$TESTBED" down >/dev/null 2>&1 || true
  exit $status
}

testbed_up() {
  local why
  if ! why=$("$TESTBED" check 2>&1); then
    echo "SKIP: $why"
    exit 77
  fi
  trap testbed_cleanup EXIT
  "$TESTBED" up "$1"
}

testbed_hostfile() {
  local file=$1 i=1 slots
  shift
  : >"$file"
  for slots in "$@"; do
    echo "$TB-h$i slots=$slots" >>"$file"
    i=$((i + 1))
  done
}

on_host() { "$TESTBED_EXEC" "$@"; }

# The mpirun options that launch over the testbed (docs/cluster.md shows
# the same for real hosts, with ssh).
testbed_mpirun_options() {
  echo "--map-by slot --mca plm_rsh_agent $TESTBED_EXEC" \
       "--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0" \
       "--mca btl tcp,vader,self --mca mpi_yield_when_idle 1"
}

start_testbed_job() {
  local tandem=$1 config=$2 hostfile=$3 np=$4 log=$5 listen=${6:-127.0.0.1}
  : >"$log"
  on_host "$TB-h1" mpirun -np "$np" --hostfile "$hostfile" $(testbed_mpirun_options) \
    "$tandem" serve --config "$config" --host "$listen" --port 0 >"$log" 2>&1 &
  pid=$!
  wait_testbed_ready "$log"
}

# start_testbed_server TANDEM CONFIG LOG: one process on $TB-h1, no mpirun
# (the reference the jobs are compared with); sets $pid and $port.
start_testbed_server() {
  local tandem=$1 config=$2 log=$3
  : >"$log"
  on_host "$TB-h1" "$tandem" serve --config "$config" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
  pid=$!
  wait_testbed_ready "$log"
}

wait_testbed_ready() {  # wait_testbed_ready LOG: the server in $pid says it is ready (sets $port)
  local log=$1
  port=""
  for _ in $(seq 1 900); do
    port=$(sed -n 's|.*listening on http://[^ ]*:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
    if [ -n "$port" ] && grep -q "tandem: ready" "$log"; then return 0; fi
    kill -0 $pid 2>/dev/null || { cat "$log"; echo "the job ended before it was ready"; return 1; }
    sleep 0.1
  done
  cat "$log"
  echo "the job was not ready within 90 s"
  return 1
}

# The variable holding a rank's number in its environment from the start:
# mpirun's, or srun's (Open MPI sets OMPI_COMM_WORLD_RANK under srun only
# inside MPI_Init, which /proc/PID/environ does not show).
rank_variable() { echo "(OMPI_COMM_WORLD_RANK|SLURM_PROCID)"; }

# job_rank_where RANK: "PID HOST" of that rank's tandem process.
job_rank_where() {
  local host candidate
  for host in $("$TESTBED" hosts | awk '{print $1}'); do
    for candidate in $(ip netns pids "$host"); do
      if grep -qxE "$(rank_variable)=$1" < <(tr '\0' '\n' </proc/$candidate/environ 2>/dev/null) &&
         [ "$(cat /proc/$candidate/comm 2>/dev/null)" = tandem ]; then
        echo "$candidate $host"
        return 0
      fi
    done
  done
  return 1
}

job_rank_pid() { local where; where=$(job_rank_where "$1") || return 1; echo "${where% *}"; }
job_rank_host() { local where; where=$(job_rank_where "$1") || return 1; echo "${where#* }"; }

stop_testbed_job() {
  kill -TERM "$(job_rank_pid 0)"
  wait_testbed_end
}

stop_testbed_server() {  # the graceful end of start_testbed_server's process
  local candidate
  for candidate in $(ip netns pids "$TB-h1"); do
    if [ "$(cat /proc/$candidate/comm 2>/dev/null)" = tandem ]; then kill -TERM "$candidate"; fi
  done
  wait_testbed_end
}

wait_testbed_end() {  # $pid ends within 60 s; returns its status
  for _ in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then echo "the job still runs 60 s after SIGTERM to rank 0"; return 1; fi
  local status=0
  wait $pid || status=$?
  return $status
}

# Slurm on the testbed (tools/cluster/testbed_daemons.sh): slurmctld on
# $TB-h1, a slurmd on every host. Its commands run inside $TB-h1 (on_host
# passes SLURM_CONF on: nsenter keeps the environment).
TESTBED_DAEMONS=$(dirname "$TESTBED")/testbed_daemons.sh

slurm_up() {
  for tool in munged slurmctld slurmd sbatch; do
    command -v $tool >/dev/null || { echo "SKIP: no $tool (Debian: munge slurmctld slurmd slurm-client)"; exit 77; }
  done
  "$TESTBED_DAEMONS" start
  SLURM_CONF=$("$TESTBED_DAEMONS" conf)
  export SLURM_CONF
}

on_slurm() { on_host "$TB-h1" "$@"; }

# start_slurm_job LOG SCRIPT [ARGS...]: sbatch SCRIPT ARGS from the current
# directory, its output in LOG; waits until the server is ready. Sets $job
# (the job's id) and $port.
start_slurm_job() {
  local log=$1 script=$2
  shift 2
  : >"$log"
  job=$(on_slurm cd "$PWD" "&&" sbatch --parsable --output="$log" "$script" "$@")
  [[ "$job" =~ ^[0-9]+$ ]] || { echo "sbatch said: $job"; return 1; }
  port=""
  for _ in $(seq 1 900); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -n 1)
    if [ -n "$port" ] && grep -q "tandem: ready" "$log"; then return 0; fi
    if [ -z "$(on_slurm squeue -h -j "$job" 2>/dev/null)" ]; then
      cat "$log"; echo "job $job ended before it was ready"; return 1
    fi
    sleep 0.1
  done
  cat "$log"
  echo "job $job was not ready within 90 s"
  return 1
}

# stop_slurm_job: scancel --signal=TERM (every task gets SIGTERM; the
# coordinator's is the graceful end), then waits up to 60 s for the job to
# leave the queue; fails unless it COMPLETED with exit code 0.
stop_slurm_job() {
  on_slurm scancel --signal=TERM "$job"
  for _ in $(seq 1 600); do
    [ -z "$(on_slurm squeue -h -j "$job" 2>/dev/null)" ] && break
    sleep 0.1
  done
  if [ -n "$(on_slurm squeue -h -j "$job" 2>/dev/null)" ]; then
    on_slurm squeue; echo "job $job still runs 60 s after scancel --signal=TERM"; return 1
  fi
  local state
  state=$(on_slurm scontrol show job "$job" | grep -o -E '(JobState|ExitCode)=[^ ]*' | paste -sd' ')
  [ "$state" = "JobState=COMPLETED ExitCode=0:0" ] || { echo "job $job: $state"; return 1; }
}
