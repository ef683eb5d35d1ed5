#!/bin/bash
# Outputs do not depend on the hosts: the snapshot's requests (greedy with
# the model, ngram and no drafter, seeded sampling, penalties; 8 at a time)
# give exactly the same text from one process as from an MPI job launched by
# mpirun across four testbed hosts, configs/cluster-cpu.yaml's placement one
# rank a host: the coordinator on h1, the draft on h2, the TP-2 target on h3
# and h4 (speculation.pipeline auto, which pipelines some steps). And again
# with the draft rank drafting ahead on every step it can (pipeline ahead),
# its server listening on every interface of h1 and asked by a client on
# h5 at h1's address (server.allowed_hosts), as docs/cluster.md's recipe
# for several hosts does. The bytes really crossed the network: eth0's
# counters of h3 and h4 grew by at least what the target's all-reduces must
# carry for the positions it ran, and h2's by the draft's share. Each job
# ends with exit 0 within 60 s of SIGTERM to rank 0, and after `testbed.sh
# down` nothing of the testbed is left: no namespace, no mount, none of the
# job's processes.
# usage: run_multihost_outputs.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source tests/support/testbed_job.sh
source tests/support/testbed_leftovers.sh
source tests/support/cluster_outputs.sh  # placement, compare, require_steps_of_shape

eth0_bytes() {  # eth0_bytes HOST: "RX TX", bytes through its eth0 so far
  ip netns exec "$1" cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/tx_bytes |
    paste -sd' '
}

# The clients: on $TB-h1 asking its loopback, or on $TB-h5 (no rank there)
# asking h1's address over the network.
ask() {  # ask CLIENT_HOST SERVER_ADDRESS: the snapshot, to stdout
  on_host "$1" python3 tests/cluster/completions_snapshot.py "$port" "$2"
}
metrics() {  # metrics CLIENT_HOST SERVER_ADDRESS
  on_host "$1" curl -sf "http://$2:$port/metrics"
}
metric() {  # metric NAME: its value on the job's /metrics (asked as the snapshot was), as an integer
  metrics $client | sed -n "s/^tandem_$1\({[^}]*}\)\? //p" | cut -d. -f1
}

# require_growth HOST BEFORE AFTER RX_FLOOR TX_FLOOR WHY: eth0's counters
# (BEFORE, AFTER: "RX TX") grew by at least the floors.
require_growth() {
  local rx0 tx0 rx1 tx1
  read -r rx0 tx0 <<<"$2"
  read -r rx1 tx1 <<<"$3"
  echo "$1 eth0: received $((rx1 - rx0)) bytes (at least $4 expected), sent $((tx1 - tx0)) (at least $5): $6"
  if [ $((rx1 - rx0)) -lt "$4" ] || [ $((tx1 - tx0)) -lt "$5" ]; then
    echo "$1: too few bytes crossed its eth0"
    exit 1
  fi
}

# require_ranks_on_hosts NAME: rank r of the job runs on host r + 1, and
# the target's shards said they were ready (naming their host, if they do).
require_ranks_on_hosts() {
  local rank line
  for rank in 0 1 2 3; do
    [ "$(job_rank_host $rank)" = "$TB-h$((rank + 1))" ] ||
      { echo "$1: rank $rank runs on $(job_rank_host $rank), not $TB-h$((rank + 1))"; exit 1; }
  done
  for rank in 2 3; do
    line=$(grep -E "rank $rank \(target shard $((rank - 2)) of 2.* ready" "$work/$1.log" || true)
    [ -n "$line" ] || { echo "$1: no ready line from rank $rank"; exit 1; }
    if [[ "$line" =~ $TB-h[0-9] && ! "$line" =~ $TB-h$((rank + 1))([^0-9]|$) ]]; then
      echo "$1: rank $rank's ready line names another host: $line"; exit 1
    fi
  done
  echo "$1: ranks 0-3 on $TB-h1..$TB-h4; the target's shards on $TB-h3 and $TB-h4"
}

# require_bytes_crossed NAME H2 H3 H4: eth0's counters of h2, h3 and h4 grew
# from H2, H3, H4 ("RX TX") by what the snapshot's work had to send.
# The target ran target_step_tokens_sum positions, each through 2 * layers
# + 1 all-reduces (attention, MLP; the embedding) of hidden_size floats over
# its TP group: each shard sends and receives at least that. The draft
# rank sends target rank 0 a q row (vocab_size floats) for each token it
# drafts for a sampled request, so at least one for each that ran to
# max_tokens; each such request's drafts were asked for by at least one
# DraftStep, a TCP segment of 66 bytes or more.
require_bytes_crossed() {
  local floors shards positions draft_rx draft_tx sampled
  floors=$(python3 - "$(metric target_step_tokens_sum)" "$work/$1.jsonl" <<'PY'
import json, sys
c = json.load(open("models/tiny/target/config.json"))
positions = int(sys.argv[1])
answers = [json.loads(line) for line in open(sys.argv[2])]
sampled = sum(1 for a in answers if "sampled" in a["name"] and a["finish_reason"] == "length")
print(positions * (2 * c["num_hidden_layers"] + 1) * c["hidden_size"] * 4, positions,
      sampled * 66, sampled * c["vocab_size"] * 4, sampled)
PY
)
  read -r shards positions draft_rx draft_tx sampled <<<"$floors"
  require_growth "$TB-h3" "$3" "$(eth0_bytes "$TB-h3")" "$shards" "$shards" "all-reduces for $positions positions"
  require_growth "$TB-h4" "$4" "$(eth0_bytes "$TB-h4")" "$shards" "$shards" "all-reduces for $positions positions"
  require_growth "$TB-h2" "$2" "$(eth0_bytes "$TB-h2")" "$draft_rx" "$draft_tx" "q rows for $sampled sampled requests"
}

# job NAME CONFIG LISTEN CLIENT [SHAPE]: the 4-host job, its server on
# LISTEN, and its snapshot asked from CLIENT ("HOST ADDRESS": where the
# client runs, the address it asks) with its steps of SHAPE, when given;
# then its graceful end. Its answers must be one process's.
job() {
  client=$4
  start_testbed_job "$tandem" "$2" "$work/hosts" 4 "$work/$1.log" "$3"
  require_ranks_on_hosts "$1"
  local h2 h3 h4
  h2=$(eth0_bytes "$TB-h2") h3=$(eth0_bytes "$TB-h3") h4=$(eth0_bytes "$TB-h4")
  ask $client >"$work/$1.jsonl"
  if [ -n "${5:-}" ]; then
    metrics $client | require_steps_of_shape "$1" "$5"
  fi
  require_bytes_crossed "$1" "$h2" "$h3" "$h4"
  if [ "$1" = hosts4 ]; then testbed_record_processes "$work/processes"; fi
  local status=0 began=$SECONDS
  stop_testbed_job || status=$?
  [ $status -eq 0 ] || { cat "$work/$1.log"; echo "$1: exited $status after SIGTERM to rank 0"; exit 1; }
  echo "$1: the job ended with exit 0 $((SECONDS - began)) s after SIGTERM to rank 0"
  compare "$1"
}

testbed_up 5  # ranks on h1..h4; h5 is a client machine
testbed_hostfile "$work/hosts" 1 1 1 1
h1_address=$("$TESTBED" hosts | awk -v h="$TB-h1" '$1 == h {print $2}')

start_testbed_server "$tandem" configs/local.yaml "$work/single.log"
ask "$TB-h1" 127.0.0.1 >"$work/single.jsonl"
stop_testbed_server

job hosts4 configs/cluster-cpu.yaml 127.0.0.1 "$TB-h1 127.0.0.1"
# Drafting ahead, with the server on every interface of h1 answering the
# address clients use (server.allowed_hosts), and the client on h5.
placement pipelined-ahead 1 "2, 3" ahead
sed -i "s/^server:.*/&\n  allowed_hosts: [\"$h1_address\"]/" "$work/pipelined-ahead.yaml"
job pipelined-ahead "$work/pipelined-ahead.yaml" 0.0.0.0 "$TB-h5 $h1_address" ahead

"$TESTBED" down
assert_testbed_gone "$work/processes"
