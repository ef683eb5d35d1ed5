# Sourced by the end-to-end test scripts: start_tandem_server TANDEM LOG
# starts `tandem serve` on the embedded default deployment (configs/local.yaml,
# any free port; run from the repository root) and waits until it is ready.
# Sets $pid and $port; a trap kills the server if the script exits early.
start_tandem_server() {
  local tandem=$1 log=$2
  "$tandem" serve --config configs/local.yaml --port 0 2>"$log" &
  pid=$!
  trap 'kill -9 $pid 2>/dev/null || true' EXIT
  port=""
  for _ in $(seq 1 600); do
    if grep -q "tandem: ready" "$log"; then
      port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log")
      return 0
    fi
    kill -0 $pid 2>/dev/null || { cat "$log"; return 1; }
    sleep 0.1
  done
  echo "server did not become ready"
  cat "$log"
  return 1
}
