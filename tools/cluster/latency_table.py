#!/usr/bin/env python3
"""The latency benchmark's two helpers (tools/cluster/latency_benchmark.sh).

  latency_table.py scrape URL FILE    GET URL/metrics into FILE
  latency_table.py table DIR [--json FILE]
      the tables of docs/benchmarks.md ("Across hosts: link latency") from
      DIR's cells: cell_<delay>_<concurrency>_<variant>.{before,after,json}

Per target step, from the counters' increase over a cell (docs/serving.md,
"Metrics"), each divided by tandem_target_steps_total:
  wall      tandem_target_seconds_total: the engine's wait for the pass
  compute   forward on target rank 0 - its time in TP collectives
  TP comm   tandem_target_communication_seconds_total
  verify    tandem_target_verify_seconds_total (rank 0 after its forward)
  messages  wall - forward - verify: TargetStep out, TargetResult back,
            the target ranks' bookkeeping
  draft     tandem_draft_seconds_total: the engine's wait for drafts
gamma (mean over verified blocks, gamma 0 included) = draft tokens /
blocks, a block being (generated - accepted) tokens: each verified block
emits its accepted drafts and one token of the target's.
"""
import json
import os
import re
import sys
import urllib.request
from pathlib import Path

VARIANTS = ["off", "gamma4", "auto", "auto+pipe"]
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def scrape(url, path):
    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=30) as response:
        Path(path).write_text(response.read().decode())


def parse(path):
    samples = {}
    for line in Path(path).read_text().splitlines():
        match = SAMPLE.match(line)
        if not match or line.startswith("#"):
            continue
        name, labels, value = match.groups()
        labels = re.sub(r'model_name="[^"]*",?', "", labels or "").replace("{}", "")
        samples[name + labels] = float(value)
    return samples


def cell_figures(before, after, run):
    delta = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in after}
    steps = delta.get("tandem_target_steps_total", 0.0)
    per_step = lambda key: 1e3 * delta.get(key, 0.0) / steps if steps else 0.0  # noqa: E731
    wall = per_step("tandem_target_seconds_total")
    forward = per_step("tandem_target_forward_seconds_total")
    comm = per_step("tandem_target_communication_seconds_total")
    verify = per_step("tandem_target_verify_seconds_total")
    generated = delta.get("tandem_generation_tokens_total", 0.0)
    accepted = delta.get("tandem_spec_decode_num_accepted_tokens_total", 0.0)
    drafted = delta.get("tandem_spec_decode_num_draft_tokens_total", 0.0)
    blocks = generated - accepted
    pipelined = sum(delta.get(f'tandem_pipeline_steps_total{{shape="{s}"}}', 0.0)
                    for s in ("ahead", "pingpong"))
    return {
        "output_tokens_per_s": run.get("output_throughput", 0.0),
        "completed": run.get("completed", 0), "failed": run.get("failed", 0),
        "target_steps": steps,
        "step_wall_ms": wall, "compute_ms": forward - comm, "tp_comm_ms": comm,
        "verify_ms": verify, "messages_ms": wall - forward - verify,
        "draft_wait_ms": per_step("tandem_draft_seconds_total"),
        "engine_step_ms": per_step("tandem_engine_step_seconds_total"),
        "tokens_per_step": generated / steps if steps else 0.0,
        "mean_gamma": drafted / blocks if blocks > 0 else 0.0,
        "acceptance": accepted / drafted if drafted else 0.0,
        "cost_ratio_c": after.get("tandem_spec_decode_cost_ratio", 0.0),
        "pipelined_share": pipelined / steps if steps else 0.0,
    }


def load_run(path):
    if not path.exists():
        return {}
    runs = json.loads(path.read_text()).get("runs", [])  # one run: one variant, one load
    return runs[0].get("summary", {}) if runs else {}


def table(directory, json_out=None, label=""):
    cells = {}
    for before in sorted(Path(directory).glob("cell_*.before")):
        _, delay, concurrency, variant = before.stem.split("_", 3)
        after = before.with_suffix(".after")
        if not after.exists():
            continue
        run = load_run(before.with_suffix(".json"))
        cells[(float(delay), int(concurrency), variant)] = cell_figures(
            parse(before), parse(after), run)
    keys = sorted({(d, c) for d, c, _ in cells})
    method = lambda d: ("none" if d == 0 else "transport hold") + label  # noqa: E731
    print("| one-way delay (method) | concurrency | off tok/s | gamma 4 | auto | auto+pipe "
          "| gamma 4 / off | auto / off | auto+pipe / off | mean gamma auto (+pipe) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d, c in keys:
        got = {v: cells.get((d, c, v)) for v in VARIANTS}
        rate = lambda v: got[v]["output_tokens_per_s"] if got[v] else 0.0  # noqa: E731
        ratio = lambda v: f"{rate(v) / rate('off'):.2f}x" if rate("off") else "-"  # noqa: E731
        gammas = " (".join(f"{got[v]['mean_gamma']:.1f}" if got[v] else "-"
                           for v in ("auto", "auto+pipe")) + ")"
        print(f"| {d:g} ms ({method(d)}) | {c} | " +
              " | ".join(f"{rate(v):.1f}" for v in VARIANTS) +
              f" | {ratio('gamma4')} | {ratio('auto')} | {ratio('auto+pipe')} | {gammas} |")
    print()
    print("| one-way delay | concurrency | variant | target step ms | compute | TP comm | verify "
          "| messages | draft wait ms/step | tokens/step | alpha | c | pipelined steps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (d, c, v), f in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                             VARIANTS.index(kv[0][2]))):
        print(f"| {d:g} ms | {c} | {v} | {f['step_wall_ms']:.2f} | {f['compute_ms']:.2f} | "
              f"{f['tp_comm_ms']:.2f} | {f['verify_ms']:.2f} | {f['messages_ms']:.2f} | "
              f"{f['draft_wait_ms']:.2f} | {f['tokens_per_step']:.2f} | {f['acceptance']:.2f} | "
              f"{f['cost_ratio_c']:.2f} | {100 * f['pipelined_share']:.0f}% |")
    failed = sum(f["failed"] for f in cells.values())
    if failed:
        print(f"\n{failed} requests failed")
    if json_out:
        Path(json_out).write_text(json.dumps(
            [{"delay_ms": d, "concurrency": c, "variant": v, **f}
             for (d, c, v), f in sorted(cells.items())], indent=1))


def main(argv):
    if len(argv) == 4 and argv[1] == "scrape":
        scrape(argv[2], argv[3])
    elif len(argv) in (3, 5) and argv[1] == "table":
        rate = os.environ.get("TBF_RATE")
        table(argv[2], argv[4] if len(argv) == 5 and argv[3] == "--json" else None,
              f", tbf {rate}" if rate else "")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
