#!/bin/bash
# The test-only link delay (TANDEM_TEST_LINK_DELAY_MS, docs/cluster.md "Link
# latency (test only)") changes when messages arrive, never what they say:
# the 4-host job of the latency benchmark (coordinator h1, draft h2, TP-2
# target h3 + h4) gives the same outputs (greedy with every drafter, seeded
# at a fixed gamma; tests/cluster/completions_snapshot.py) with a 1 ms hold
# on every link between hosts as with none, and says at start that the
# delay is on. A variable that does not parse ends the job at start with an
# error naming it.
# usage: run_link_delay_outputs.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source tests/support/testbed_job.sh
# mpirun passes the variable to every rank, as -x would.
export OMPI_MCA_mca_base_env_list=TANDEM_TEST_LINK_DELAY_MS
testbed_up 4
testbed_hostfile "$work/hosts" 1 1 1 1
config=$source/configs/cluster-cpu.yaml

for delay in 0 1; do
  if [ "$delay" = 0 ]; then unset TANDEM_TEST_LINK_DELAY_MS; else export TANDEM_TEST_LINK_DELAY_MS=$delay; fi
  start_testbed_job "$tandem" "$config" "$work/hosts" 4 "$work/serve-$delay.log"
  on_host "$TB-h1" python3 tests/cluster/completions_snapshot.py "$port" >"$work/outputs-$delay"
  stop_testbed_job
  pid=""
done
if grep -q "TEST-ONLY link delay" "$work/serve-0.log"; then
  echo "FAIL: the job without the variable says a delay is active"; exit 1
fi
grep -q "TEST-ONLY link delay active .*held 1 ms one way" "$work/serve-1.log" ||
  { echo "FAIL: the job with a 1 ms delay does not say so at start"; cat "$work/serve-1.log"; exit 1; }
[ -s "$work/outputs-0" ] || { echo "FAIL: no outputs"; exit 1; }
if ! diff "$work/outputs-0" "$work/outputs-1"; then
  echo "FAIL: outputs with a 1 ms hold differ from those without"; exit 1
fi

export TANDEM_TEST_LINK_DELAY_MS=fast
if on_host "$TB-h1" mpirun -np 4 --hostfile "$work/hosts" $(testbed_mpirun_options) \
     "$tandem" serve --config "$config" --host 127.0.0.1 --port 0 2>"$work/bad.log"; then
  echo "FAIL: the job started with TANDEM_TEST_LINK_DELAY_MS=fast"; exit 1
fi
grep -q "TANDEM_TEST_LINK_DELAY_MS='fast'" "$work/bad.log" ||
  { echo "FAIL: the error does not name the variable"; cat "$work/bad.log"; exit 1; }
echo "PASS: $(wc -l <"$work/outputs-0") outputs equal with a 1 ms hold and without; a bad value refused"
