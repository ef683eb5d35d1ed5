#!/usr/bin/env python3
"""Tests of tools/loadtest/prefix_cache_table.py: each row pairs a
workload's on and off runs with on/off ratios and the cache's hit rates,
failed requests make the exit status 1, and misnamed or unpaired results
are refused.

usage: prefix_cache_table_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."
SCRIPT = f"{SOURCE_DIR}/tools/loadtest/prefix_cache_table.py"


def result(p50, p99, throughput, failed=0, cached_rate=None, cache=None):
    """A tandem-loadtest --json of one run, with the figures the table reads."""
    summary = {"completed": 10 - failed, "failed": failed, "total_input_tokens": 5000, "median_ttft_ms": p50,
               "p99_ttft_ms": p99, "output_throughput": throughput}
    if cached_rate is not None:
        summary["cached_token_rate"] = cached_rate
    run = {"variant": "v", "load": "concurrency 1", "summary": summary}
    if cache is not None:
        run["prefix_cache"] = cache
    return {"runs": [run]}


class Table(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, report):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as out:
            json.dump(report, out)
        return path

    def table(self, *paths):
        done = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True,
                              timeout=60)
        return done.returncode, done.stdout, done.stderr

    def test_a_row_pairs_on_and_off_with_ratios_and_hit_rates(self):
        on = self.write("chat.c8.on.json", result(50, 400, 120.0, cached_rate=0.75,
                                                  cache={"target_hit_rate": 0.8, "draft_hit_rate": 0.7}))
        off = self.write("chat.c8.off.json", result(200, 800, 100.0, cached_rate=0.0))
        code, out, err = self.table(on, off)
        self.assertEqual(code, 0, err)
        rows = out.splitlines()
        self.assertEqual(len(rows), 3)  # header, rule, one row
        cells = [cell.strip() for cell in rows[2].strip("|").split("|")]
        self.assertEqual(cells, ["chat", "8", "10/10", "5000/5000", "200", "50", "0.25x", "800", "400", "0.50x",
                                 "100.0", "120.0", "1.20x", "0.750", "0.800", "0.700", "0"])
        self.assertEqual(len(rows[0].split("|")), len(rows[2].split("|")))

    def test_failed_requests_show_and_make_the_status_1(self):
        on = self.write("chat.c1.on.json", result(50, 60, 10.0, failed=2))
        off = self.write("chat.c1.off.json", result(100, 120, 10.0))
        code, out, err = self.table(on, off)
        self.assertEqual(code, 1)
        self.assertTrue(out.splitlines()[2].endswith("| 2 |"))
        self.assertIn("failed", err)

    def test_unpaired_or_misnamed_results_are_refused(self):
        on = self.write("chat.c1.on.json", result(50, 60, 10.0))
        code, _, err = self.table(on)
        self.assertEqual(code, 1)
        self.assertIn("needs both an on and an off run", err)
        misnamed = self.write("chat-on.json", result(50, 60, 10.0))
        code, _, err = self.table(misnamed)
        self.assertEqual(code, 1)
        self.assertIn("chat-on.json", err)


if __name__ == "__main__":
    unittest.main()
