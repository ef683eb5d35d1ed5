#!/bin/bash
# The front door: `tandem serve --check-config` and the command lines.
# - `tandem serve --check-config`: exit 0 and a summary for configs/local.yaml;
#   exit 2 and "FILE:LINE: key.path: ..." for a bad deployment, loading
#   nothing, and for one `serve` would reject at start (a host name where an
#   address is needed, a model directory that is not there, a bad --port or
#   --host, which it names).
# - `tandem`, `tandem-bench` and `tandem-loadtest` (built next to tandem):
#   --help/-h exits 0 with usage; an unknown flag or a stray argument exits 2
#   naming it.
# usage: run_check_config.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
bench=$(dirname "$tandem")/tandem-bench
loadtest=$(dirname "$tandem")/tandem-loadtest
mkdir -p "$work"
cd "$source"

# expect STATUS PATTERN COMMAND...: COMMAND exits STATUS and prints PATTERN
# (a grep -E pattern) on stdout or stderr.
expect() {
  local want=$1 pattern=$2
  shift 2
  local status=0 output
  output=$("$@" 2>&1) || status=$?
  [ "$status" -eq "$want" ] || { echo "$*: expected exit $want, got $status: $output"; exit 1; }
  grep -qE -- "$pattern" <<< "$output" || { echo "$*: expected /$pattern/ in: $output"; exit 1; }
}

expect 0 "configs/local.yaml: OK" "$tandem" serve --check-config configs/local.yaml

bad="$work/bad-deployment.yaml"
printf 'models:\n  target:\n    path: models/tiny/target\nscheduler:\n  max_running_sessions: many\n' > "$bad"
expect 2 "bad-deployment.yaml:5: scheduler.max_running_sessions: expected an integer" \
  "$tandem" serve --check-config "$bad"

# What serve would reject at start, found before it loads or binds anything.
named_host="$work/named-host.yaml"
printf 'server:\n  host: localhost\nmodels:\n  target:\n    path: models/tiny/target\n' > "$named_host"
expect 2 "named-host.yaml:2: server.host: must be an IP address" \
  "$tandem" serve --check-config "$named_host"
expect 2 "named-host.yaml:2: server.host: must be an IP address" \
  "$tandem" serve --config "$named_host"
missing_model="$work/missing-model.yaml"
printf 'models:\n  target:\n    path: models/tiny/target\n  draft:\n    path: models/no-such-draft\n' \
  > "$missing_model"
expect 2 "missing-model.yaml:5: models.draft.path: models/no-such-draft is not a directory" \
  "$tandem" serve --check-config "$missing_model"
expect 2 "^tandem serve: error: --port: must be in \[0, 65535\], got 70000" \
  "$tandem" serve --check-config configs/local.yaml --port 70000
expect 2 "^tandem serve: error: --host: must be an IP address" \
  "$tandem" serve --check-config configs/local.yaml --host localhost
expect 0 "server: 0.0.0.0:0 " "$tandem" serve --check-config configs/local.yaml --host 0.0.0.0 --port 0
# The request log's format: the YAML key (named with its line when wrong) and the flag over it.
bad_log_format="$work/bad-log-format.yaml"
printf 'server:\n  log_format: xml\nmodels:\n  target:\n    path: models/tiny/target\n' > "$bad_log_format"
expect 2 "bad-log-format.yaml:2: server.log_format: must be one of text, json" \
  "$tandem" serve --check-config "$bad_log_format"
expect 0 "request log as json" "$tandem" serve --check-config configs/local.yaml --log-format json
expect 2 "^tandem serve: error: --log-format: expected text or json, got \"xml\"" \
  "$tandem" serve --check-config configs/local.yaml --log-format xml

# The command lines.
expect 0 "Usage: tandem " "$tandem" -h
expect 0 "Usage: tandem " "$tandem" --help
expect 0 "Usage: tandem serve .*" "$tandem" serve --help
expect 0 "--check-config FILE" "$tandem" serve --help
expect 0 "--max-tokens INT=64" "$tandem" generate --help
expect 0 "--decode" "$tandem" tokenize --help
expect 2 "not expected: --bogus" "$tandem" serve --bogus
expect 2 "not expected: extra" "$tandem" serve extra
expect 2 "not expected: .*-p" "$tandem" serve -p 19201
expect 2 "Usage: tandem " "$tandem"
for suite in forward matmul speculative coupling steps batching pipeline tensor-parallel; do
  expect 0 "Usage: tandem-bench $suite" "$bench" "$suite" --help
done
expect 0 "Usage: tandem-bench " "$bench" -h
expect 2 "not expected: --bogus" "$bench" forward --bogus
expect 2 "not expected: frobnicate" "$bench" frobnicate
expect 0 "--concurrency N\[,N...\]" "$loadtest" --help
expect 2 "not expected: --bogus" "$loadtest" --bogus --concurrency 1
expect 2 "not expected: extra" "$loadtest" --concurrency 1 extra
echo "check-config and command lines: OK"
