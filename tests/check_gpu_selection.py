#!/usr/bin/env python3
"""Checks the GPU test selection (the gpu_* ctest labels) on any machine.

  check_gpu_selection.py CTEST BUILD_DIR KERNELS_CUDA_TESTS NCCL_BUILT(0|1)

The GPU checks run their stages by label (tools/gpu/gpu_checks.sh); a test
left out of its label is a GPU number nobody checks. So:
  1. every case of the twins binary, and every *Twin suite written in
     tests/kernels/cuda/, is in gpu_twins;
  2. each GPU test has one known stage label, and every stage has tests
     (gpu_nccl where the NCCL communicator is built);
  3. every GPU test compares with the CPU or an independent reference, or
     says in its name that it does not (tools/gpu/summarize.py's rules);
  4. no test outside the labels looks like a GPU test (a name with cuda,
     nccl, Twin or StepGraphs) unless it is a CPU test named below;
  5. on a machine without a device, every GPU test reports itself skipped
     (a CPU test labelled gpu_* would pass instead).
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tools", "gpu"))
from summarize import comparison_of  # noqa: E402

STAGE_LABELS = {"gpu_twins", "gpu_reference", "gpu_graphs", "gpu_engine", "gpu_nccl",
                "gpu_server"}
LOOKS_LIKE_GPU = re.compile(r"cuda|Cuda|CUDA|nccl|Nccl|NCCL|Twin\b|StepGraphs")
# CPU tests whose names mention CUDA: they check the deployment keys.
CPU_TESTS_ABOUT_CUDA = {
    "DeploymentConfig.CudaBackendWeightDtypeIsAutoUnlessToldOtherwise",
}

problems = []


def problem(text):
    problems.append(text)
    print("FAIL: " + text)


def ctest_tests(ctest, build):
    """Every registered test, as `ctest --show-only=json-v1` describes it.
    Read from a copy of the CTestTestfile tree, so this ctest leaves the
    build's Testing/ folder (which the running ctest writes) alone."""
    with tempfile.TemporaryDirectory() as copy:
        for path in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
            target = os.path.join(copy, os.path.relpath(path, build))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(path, target)
        out = subprocess.run([ctest, "--test-dir", copy, "--show-only=json-v1"], check=True,
                             capture_output=True, text=True).stdout
        out = out.replace(copy, build)  # a test's default folder is its build folder
    tests = json.loads(out)["tests"]
    for test in tests:
        test["props"] = {p["name"]: p["value"] for p in test.get("properties", [])}
    return tests


def gtest_cases(binary):
    """Full names (Prefix/Suite.Case/Param) that a gtest binary lists."""
    out = subprocess.run([binary, "--gtest_list_tests"], check=True, capture_output=True,
                         text=True).stdout
    names, suite = [], ""
    for line in out.splitlines():
        if not line.strip() or line.startswith("Running main"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names


def twin_suites_in_source():
    suites = set()
    for path in glob.glob(os.path.join(SOURCE, "tests", "kernels", "cuda", "*_test.cpp")):
        with open(path, encoding="utf-8") as f:
            suites |= set(re.findall(r"^TEST(?:_P|_F)?\((\w+Twin),", f.read(), re.M))
    return suites


def run(test):
    """(skipped, exit status): `test` run as ctest would run it."""
    env = dict(os.environ)
    for assignment in test["props"].get("ENVIRONMENT", []):
        key, _, value = assignment.partition("=")
        env[key] = value
    done = subprocess.run(test["command"], cwd=test["props"].get("WORKING_DIRECTORY"), env=env,
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    patterns = test["props"].get("SKIP_REGULAR_EXPRESSION", [])
    return any(re.search(p, output) for p in patterns), done.returncode


def main(ctest, build, twins_binary, nccl_built):
    tests = ctest_tests(ctest, build)
    labels = {t["name"]: [l for l in t["props"].get("LABELS", []) if l.startswith("gpu_")]
              for t in tests}
    gpu = [t for t in tests if labels[t["name"]]]
    by_stage = {}
    for test in gpu:
        stages = labels[test["name"]]
        if len(stages) != 1 or stages[0] not in STAGE_LABELS:
            problem(f"{test['name']}: GPU labels {stages}, expected one of {sorted(STAGE_LABELS)}")
        by_stage.setdefault(stages[0], []).append(test["name"])
    for stage in sorted(STAGE_LABELS):
        print(f"{stage}: {len(by_stage.get(stage, []))} tests")
        if not by_stage.get(stage) and (stage != "gpu_nccl" or nccl_built == "1"):
            problem(f"no test carries {stage}")

    # 1. The twins.
    twins = set(by_stage.get("gpu_twins", []))
    listed = gtest_cases(twins_binary)
    for case in listed:
        if case not in twins:
            problem(f"{case} (kernels_cuda_tests) is not in gpu_twins")
    for suite in sorted(twin_suites_in_source()):
        if not any(re.search(r"(^|/)" + suite + r"\.", name) for name in twins):
            problem(f"twin suite {suite} has no case in gpu_twins")
    print(f"twins: {len(listed)} cases listed by the binary, all in gpu_twins"
          if all(c in twins for c in listed) else "twins: some missing")

    # 3. What each compares with.
    for test in gpu:
        if comparison_of(test["name"]) is None:
            problem(f"{test['name']}: compares with what? Name it SelfCheck or plumbing, "
                    "or add its reference to tools/gpu/summarize.py's COMPARISONS")

    # 4. Nothing left out.
    for test in tests:
        name = test["name"]
        if labels[name] or name in CPU_TESTS_ABOUT_CUDA or name == "gpu_test_selection":
            continue
        if LOOKS_LIKE_GPU.search(name):
            problem(f"{name} looks like a GPU test but has no gpu_* label")

    # 5. Without a device, all of them skip.
    device_probe = next((t for t in gpu if t["name"].startswith("CudaDevicePlumbing.")), None)
    if device_probe is None:
        problem("no CudaDevicePlumbing case: cannot tell whether this machine has a device")
        return 1
    skipped, status = run(device_probe)
    if not skipped and status == 0:
        print("a CUDA device is present: not checking that the GPU tests skip")
    elif not skipped:
        problem(f"{device_probe['name']} neither passed nor skipped (exit status {status})")
    else:
        ran = [t["name"] for t in gpu if not run(t)[0]]
        for name in ran:
            problem(f"{name} did not report itself skipped on a machine without a device")
        if not ran:
            print(f"without a device: all {len(gpu)} GPU tests reported themselves skipped")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
