#!/usr/bin/env python3
"""Verdicts of the GPU checks' stages, and the summary of a whole run.

tools/gpu/gpu_checks.sh calls this after each stage (python3's standard
library only):

  summarize.py ctest-verdict STAGE LOG STATUS      a ctest stage's verdict line
  summarize.py sanitizer-verdict STAGE LOG STATUS  a compute-sanitizer stage's
  summarize.py summary DIR [DIR...]                every stage, and what the
                                                   GPU's numbers were compared with

STATUS is the stage command's exit status (124 or 137: it ran out of
time). A verdict line reads "STAGE: WORD, detail" with WORD one of OK (the
stages that test nothing), PASS, FAIL, TIMEOUT, NO DEVICE, NO TOOL. The summary reads the STAGE.log files and the
verdicts.txt of each DIR (later DIRs win), so the logs of several device
calls, fetched to one machine, make one summary.
"""

import os
import re
import sys

# The order of a full run (docs/gpu.md, section 8).
STAGES = ["unpack", "configure", "build", "twins", "memcheck", "racecheck", "reference",
          "graphs", "engine", "server_1", "server_2", "server_3",
          "bench_forward", "bench_steps", "bench_steps_untiled", "bench_batching",
          "bench_serve"]

# What a GPU test compares the device's numbers with, from its name. A GPU
# test that compares with neither the CPU nor an independent reference says
# so in its name (tests/CMakeLists.txt); check_gpu_selection.py fails on a
# GPU test that matches no rule.
SELF = "the device against itself (not a check of its numbers)"
PLUMBING = "plumbing only (no number compared)"
COMPARISONS = [
    (r"SelfCheck|self_check", SELF),
    (r"[Pp]lumbing", PLUMBING),
    (r"(^|/)\w+Twin\.", "the CPU twin, on the same inputs"),
    (r"Numpy", "the NumPy reference (float64)"),
    (r"^CudaCopyFrom\.", "the values copied, exactly"),
    (r"^StepGraphs\.", "the CPU twin or a closed form"),
    (r"^transport_nccl_\d+_ranks$", "exact sums of small integers"),
]


def comparison_of(name):
    """What the GPU test `name` compares with, or None when no rule says."""
    for pattern, comparison in COMPARISONS:
        if re.search(pattern, name):
            return comparison
    return None


# " 3/30 Test #126: CudaCopyFrom.BetweenTwoBackendsOnOneDevice ....   Passed    0.50 sec"
CTEST_LINE = re.compile(
    r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(.+?)\s+\.{3,}\s*(?:\*\*\*)?(.+?)\s+[\d.]+\s+sec\s*$")


def ctest_results(text):
    """[(test name, 'passed' | 'skipped' | 'failed: how')] in run order."""
    results = []
    for line in text.splitlines():
        match = CTEST_LINE.match(line)
        if not match:
            continue
        name, status = match.group(1), match.group(2).strip()
        if status == "Passed":
            results.append((name, "passed"))
        elif status == "Skipped":
            results.append((name, "skipped"))
        else:
            results.append((name, "failed: " + status))
    return results


def counts(results):
    passed = sum(1 for _, s in results if s == "passed")
    skipped = sum(1 for _, s in results if s == "skipped")
    return passed, skipped, len(results) - passed - skipped


OUT_OF_TIME = (124, 137)  # timeout(1): stopped, or killed when it would not stop
NOT_STARTED = "not started: no time left before TANDEM_DEADLINE"  # gpu_checks.sh's words


def ctest_verdict(stage, text, status):
    results = ctest_results(text)
    passed, skipped, failed = counts(results)
    tally = f"{passed} passed, {failed} failed, {skipped} skipped of {len(results)}"
    if NOT_STARTED in text:
        return f"{stage}: TIMEOUT, {NOT_STARTED}"
    if status in OUT_OF_TIME:
        return f"{stage}: TIMEOUT, the stage ran out of time after {tally}"
    if not results:
        return f"{stage}: FAIL, no test ran (exit status {status}; see {stage}.log)"
    if failed:
        names = ", ".join(n for n, s in results if s.startswith("failed"))
        return f"{stage}: FAIL, {tally}: {names}"
    if status != 0:  # ctest itself failed, whatever the lines it printed
        return f"{stage}: FAIL, {tally}, but ctest exited with status {status} (see {stage}.log)"
    if passed == 0:
        return f"{stage}: NO DEVICE, all {skipped} skipped"
    if skipped:
        names = ", ".join(n for n, s in results if s == "skipped")
        return f"{stage}: PASS, {tally} ({names})"
    return f"{stage}: PASS, {tally}"


def sanitizer_verdict(stage, text, status):
    if status == 127 or "compute-sanitizer: not found" in text:
        return f"{stage}: NO TOOL, compute-sanitizer is not on this machine"
    if NOT_STARTED in text:
        return f"{stage}: TIMEOUT, {NOT_STARTED}"
    # memcheck ends with "ERROR SUMMARY: 0 errors"; racecheck with
    # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
    errors = re.findall(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: .*\((\d+) error", text)
    errors = ["".join(e) for e in errors]
    warnings = re.findall(r"RACECHECK SUMMARY: .*, (\d+) warning", text)
    ran = re.findall(r"\[==========\] (\d+) tests? from .* ran", text)
    skipped = re.findall(r"\[  SKIPPED \] (\d+) test", text)
    failed = re.findall(r"\[  FAILED  \] (\d+) test", text)
    detail = (f"{errors[-1] if errors else '?'} errors reported, "
              + (f"{warnings[-1]} warnings, " if warnings and warnings[-1] != "0" else "")
              + f"{ran[-1] if ran else '?'} cases ran, "
              f"{failed[-1] if failed else 0} failed, {skipped[-1] if skipped else 0} skipped")
    if status in OUT_OF_TIME:
        return f"{stage}: TIMEOUT, the stage ran out of time ({detail} so far)"
    if ran and skipped and ran[-1] == skipped[-1]:
        return f"{stage}: NO DEVICE, {detail}"
    if status == 0 and errors and errors[-1] == "0" and not failed:
        return f"{stage}: PASS, {detail}"
    return f"{stage}: FAIL, {detail} (exit status {status})"


def read_verdicts(directories):
    verdicts = {}
    for directory in directories:
        path = os.path.join(directory, "verdicts.txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stage = line.split(":", 1)[0].strip()
                if stage:
                    verdicts[stage] = line.rstrip("\n")
    return verdicts


def read_logs(directories):
    logs = {}
    for directory in directories:
        for stage in STAGES:
            path = os.path.join(directory, stage + ".log")
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    logs[stage] = f.read()
    return logs


def summary(directories):
    verdicts = read_verdicts(directories)
    logs = read_logs(directories)
    lines = ["GPU checks: one line per stage", ""]
    for stage in STAGES:
        lines.append("  " + verdicts.get(stage, f"{stage}: NOT RUN"))
    # Every GPU test case seen in a ctest stage's log, by what it compared with.
    by_comparison = {}
    for stage, text in logs.items():
        for name, status in ctest_results(text):
            comparison = comparison_of(name) or "unknown: name it (tests/CMakeLists.txt)"
            by_comparison.setdefault(comparison, []).append((name, status))
    lines += ["", "What the GPU's numbers were compared with (test cases that ran here):"]
    if not by_comparison:
        lines.append("  nothing: no ctest stage has run")
    for comparison in sorted(by_comparison, key=lambda c: (c in (SELF, PLUMBING), c)):
        results = by_comparison[comparison]
        passed, skipped, failed = counts(results)
        lines.append(f"  {comparison}: {passed} passed, {failed} failed, {skipped} skipped")
        # Every failure by name; skips too, unless all of them skipped (no device).
        for name, status in results:
            if status.startswith("failed") or (status == "skipped" and passed + failed > 0):
                lines.append(f"      {status}: {name}")
    compared = [r for c, rs in by_comparison.items() if c not in (SELF, PLUMBING) for r in rs]
    passed, _, _ = counts(compared)
    lines += ["", f"GPU numbers checked against the CPU or an independent reference: "
                  f"{passed} test cases passed."]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) >= 5 and argv[1] in ("ctest-verdict", "sanitizer-verdict"):
        stage, log, status = argv[2], argv[3], int(argv[4])
        text = ""
        if os.path.exists(log):
            with open(log, encoding="utf-8", errors="replace") as f:
                text = f.read()
        verdict = ctest_verdict if argv[1] == "ctest-verdict" else sanitizer_verdict
        print(verdict(stage, text, status))
        return 0
    if len(argv) >= 3 and argv[1] == "summary":
        sys.stdout.write(summary(argv[2:]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
