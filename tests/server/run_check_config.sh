#!/bin/bash
# `tandem serve --check-config`: exit 0 and a summary for configs/local.yaml;
# exit 2 and "FILE:LINE: key.path: ..." for a bad deployment, loading nothing.
# usage: run_check_config.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
"$tandem" serve --check-config configs/local.yaml | grep -q "configs/local.yaml: OK"

bad="$work/bad-deployment.yaml"
printf 'models:\n  target:\n    path: models/tiny/target\nscheduler:\n  max_running_sessions: many\n' > "$bad"
status=0
output=$("$tandem" serve --check-config "$bad" 2>&1) || status=$?
[ $status -eq 2 ] || { echo "expected exit 2, got $status: $output"; exit 1; }
echo "$output" | grep -q "bad-deployment.yaml:5: scheduler.max_running_sessions: expected an integer" \
  || { echo "unexpected message: $output"; exit 1; }
echo "check-config: OK"
