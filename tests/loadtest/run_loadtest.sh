#!/bin/bash
# `tandem-loadtest` against `tandem serve` on the embedded default deployment:
# a short bounded closed-loop run must finish with zero errors, account for
# every request, report TTFT <= end-to-end latency, count exactly the output
# tokens the server says it generated, and write JSON and well-formed SVG.
# Two rounds (--rounds 2): the second runs the variants in the other order,
# and each load point's comparison is the rounds' throughput ratios.
# "spec on" fixes gamma: under the auto policy the server's guard may rightly
# stop drafting on a loaded machine, and the check that it drafted would fail.
# With TANDEM_CONFIG and TANDEM_RANKS (start_tandem_server.sh) the server is
# an MPI job, stopped by SIGTERM to its rank 0.
# usage: run_loadtest.sh TANDEM_BINARY SOURCE_DIR WORK_DIR, with TANDEM_LOADTEST
# the tandem-loadtest binary (default: the one next to TANDEM_BINARY).
set -euo pipefail
tandem=$1 source=$2 work=$3
loadtest=${TANDEM_LOADTEST:-$(dirname "$tandem")/tandem-loadtest}
mkdir -p "$work"
log="$work/server.log"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
start_tandem_server "$tandem" "$log"

"$loadtest" --url "http://127.0.0.1:$port/v1/completions" --concurrency 1,3 --requests 9 \
  --input-words 12 --output-tokens 16 --seed 5 --body '{"ignore_eos": true, "temperature": 0.8}' \
  --variants '{"spec on": {"speculation": {"gamma": 4}}, "spec off": {"speculation": false}}' \
  --slo-ttft-ms 10000 --rounds 2 \
  --json "$work/loadtest.json" --plots "$work/plots" --quiet

/usr/bin/python3 - "$work" <<'PY'
import json, sys, xml.dom.minidom, pathlib
work = pathlib.Path(sys.argv[1])
report = json.load(open(work / "loadtest.json"))
runs = report["runs"]
assert len(runs) == 8, len(runs)  # 2 loads x 2 rounds x 2 variants
order = [(r["load"], r["round"], r["variant"]) for r in runs]
assert order == [(load, rnd, v) for load in ("concurrency 1", "concurrency 3")
                 for rnd, variants in ((1, ("spec on", "spec off")), (2, ("spec off", "spec on")))
                 for v in variants], order
assert report["config"]["rounds"] == 2, report["config"]
comparisons = report["comparisons"]
assert [c["load"] for c in comparisons] == ["concurrency 1", "concurrency 3"], comparisons
for c in comparisons:
    assert (c["variant"], c["baseline"]) == ("spec off", "spec on"), c
    throughput = {(r["round"], r["variant"]): r["summary"]["output_throughput"]
                  for r in runs if r["load"] == c["load"]}
    expected = [throughput[(n, "spec off")] / throughput[(n, "spec on")] for n in (1, 2)]
    assert all(abs(a - b) <= 1e-9 * b for a, b in zip(c["output_throughput_ratios"], expected)), (c, expected)
    mean = (expected[0] * expected[1]) ** 0.5
    assert abs(c["geometric_mean"] - mean) <= 1e-9 * mean, (c, mean)
    low, high = c["interval_95"]
    assert low <= mean <= high, c
for run in runs:
    s = run["summary"]
    assert s["completed"] == 9 and s["failed"] == 0, s
    assert s["total_output_tokens"] == 9 * 16, s
    assert 0 < s["mean_ttft_ms"] <= s["mean_e2el_ms"], s
    assert s["p99_ttft_ms"] <= s["p99_e2el_ms"] + 1e-9, s
    assert s["goodput"] > 0, s
    spec = run["speculation"]
    assert spec["generation_tokens"] == s["total_output_tokens"], (spec, s)
    if run["variant"] == "spec off":
        assert spec["draft_tokens"] == 0, spec
    else:
        assert spec["draft_tokens"] > 0, spec
for name in ["throughput.svg", "p99_ttft.svg", "p99_tpot.svg", "ttft_cdf.svg", "e2e_cdf.svg"]:
    xml.dom.minidom.parse(str(work / "plots" / name))
print("loadtest: all checks passed")
PY

stop_gracefully
wait $pid
trap - EXIT
