#!/usr/bin/env python3
"""The on/off table of tools/loadtest/prefix_cache_benchmark.sh, in Markdown.

usage: prefix_cache_table.py RESULT.json...

Each RESULT is the --json of one `tandem-loadtest` run (one load point),
named WORKLOAD.cN.MODE.json: WORKLOAD the workload's name, N the concurrency,
MODE `on` or `off` (prefix caching). Each row pairs the on and off runs of
a workload and concurrency: requests completed and prompt tokens sent (equal
when on and off did the same work), TTFT p50 and p99 and output throughput,
each with its on/off ratio, then what was cached with caching on: the share
of prompt tokens the responses' usage.prompt_tokens_details.cached_tokens
counts, and the hit rates (hits / queries, in tokens) of the server's target
and draft prefix caches from its /metrics. Exits 1 when a run had failed requests (the
row shows how many), so a script cannot take a broken run for a measurement.
"""
import json
import os
import sys


def read_run(path):
    """(workload, concurrency, mode, run) of one result file."""
    name = os.path.basename(path)
    parts = name.split(".")
    if len(parts) != 4 or parts[3] != "json" or not parts[1].startswith("c") or parts[2] not in ("on", "off"):
        sys.exit(f"{path}: expected a name WORKLOAD.cN.on.json or WORKLOAD.cN.off.json")
    with open(path, encoding="utf-8") as result:
        report = json.load(result)
    if len(report.get("runs", [])) != 1:
        sys.exit(f"{path}: expected the result of exactly one run")
    return parts[0], int(parts[1][1:]), parts[2], report["runs"][0]


def ratio(on, off):
    return f"{on / off:.2f}x" if off else "-"


def rate(value):
    return "-" if value is None else f"{value:.3f}"


def row(workload, concurrency, on, off):
    s_on, s_off = on["summary"], off["summary"]
    cache = on.get("prefix_cache", {})
    failed = s_on["failed"] + s_off["failed"]
    cells = [workload, str(concurrency), f"{s_on['completed']}/{s_off['completed']}",
             f"{s_on['total_input_tokens']}/{s_off['total_input_tokens']}"]
    for key in ("median_ttft_ms", "p99_ttft_ms", "output_throughput"):
        cells += [f"{s_off[key]:.0f}" if "ms" in key else f"{s_off[key]:.1f}",
                  f"{s_on[key]:.0f}" if "ms" in key else f"{s_on[key]:.1f}",
                  ratio(s_on[key], s_off[key])]
    cells += [rate(s_on.get("cached_token_rate")), rate(cache.get("target_hit_rate")),
              rate(cache.get("draft_hit_rate")), str(failed)]
    return "| " + " | ".join(cells) + " |", failed


def main(paths):
    if not paths:
        sys.exit(__doc__)
    runs = {}
    for path in paths:
        workload, concurrency, mode, run = read_run(path)
        runs.setdefault((workload, concurrency), {})[mode] = run
    print("| workload | users | requests on/off | input tokens on/off | TTFT p50 ms off | on | on/off | TTFT p99 ms off | on | "
          "on/off | output tok/s off | on | on/off | cached share (usage) | target hit rate | "
          "draft hit rate | failed |")
    print("|" + "---|" * 17)
    any_failed = False
    for (workload, concurrency), modes in runs.items():
        if set(modes) != {"on", "off"}:
            sys.exit(f"{workload} at concurrency {concurrency}: needs both an on and an off run")
        line, failed = row(workload, concurrency, modes["on"], modes["off"])
        print(line)
        any_failed = any_failed or failed > 0
    if any_failed:
        sys.exit("some requests failed: see the runs' output above")


if __name__ == "__main__":
    main(sys.argv[1:])
