#!/usr/bin/env bash
# tools/gpu/gpu_checks.sh bench_serve on this machine, in a build folder of
# its own (TANDEM_GPU_BUILD) that links to the real tandem and
# tandem-loadtest:
#   - with the stage's backend, cuda, and no GPU here: the server exits and
#     the verdict is NO DEVICE (skipped where a GPU is present);
#   - with TANDEM_SERVE_BACKEND=cpu: the whole stage runs (a server on a free
#     port, the on and off variants in 4 alternating rounds at concurrency
#     1, 8 and 16), and the verdict gives the three load points' ratios,
#     which must be the geometric means of the runs' own throughputs.
# Either way the server is gone when the stage returns.
# usage: run_bench_serve_stage.sh TANDEM TANDEM_LOADTEST SOURCE_DIR
set -euo pipefail
source=$3
work=$(mktemp -d)
trap 'pkill -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=tests/tools/gpu/stage_build.sh
source "$(dirname "$0")/stage_build.sh"
stage_build "$work" "$1" "$2"
checks=$source/tools/gpu/gpu_checks.sh

no_server_left() {
  if pgrep -f "$work/build/bench_serve.yaml" >/dev/null; then
    echo "FAIL: a server of the stage is still running"
    exit 1
  fi
}

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is present: the no-device verdict is not checked"
else
  out=$("$checks" bench_serve) || true  # the verdict says what went wrong
  echo "$out"
  [[ $(tail -n 1 <<<"$out") == "bench_serve: NO DEVICE, the server needs one ["*" s]" ]] ||
    { echo "FAIL: expected the NO DEVICE verdict"; exit 1; }
  no_server_left
fi

out=$(TANDEM_SERVE_BACKEND=cpu TANDEM_SERVE_REQUESTS=6 "$checks" bench_serve) || true
echo "$out"
no_server_left
verdict=$(grep '^bench_serve:' "$work/build/logs/verdicts.txt")
[[ $verdict == "$(tail -n 1 <<<"$out")" ]] || { echo "FAIL: verdicts.txt: $verdict"; exit 1; }
/usr/bin/python3 - "$work/build/logs/bench_serve.json" "$verdict" <<'PY'
import json, math, re, sys
report, verdict = json.load(open(sys.argv[1])), sys.argv[2]
assert verdict.startswith("bench_serve: OK, spec on / off, geometric mean of 4 rounds"), verdict
runs = report["runs"]
assert len(runs) == 24, len(runs)  # 3 loads x 4 rounds x 2 variants
for load in (1, 8, 16):
    throughput = {}
    for r in runs:
        if r["load"] == f"concurrency {load}":
            assert r["summary"]["failed"] == 0, r["summary"]
            throughput[(r["round"], r["variant"])] = r["summary"]["output_throughput"]
    ratios = [throughput[(n, "spec on")] / throughput[(n, "spec off")] for n in range(1, 5)]
    mean = math.exp(sum(math.log(x) for x in ratios) / 4)
    shown = re.search(rf"concurrency {load} ([0-9.]+) \(([0-9.]+)-([0-9.]+)\)", verdict)
    assert shown, (load, verdict)
    assert abs(float(shown.group(1)) - mean) <= 0.0005 + 1e-9, (load, shown.group(1), mean)
    assert float(shown.group(2)) <= mean <= float(shown.group(3)), (load, verdict)
print("bench_serve's verdict matches its runs")
PY
