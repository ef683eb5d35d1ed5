#!/usr/bin/env python3
"""tools/gpu/summarize.py on logs shaped like the ones ctest and
compute-sanitizer print: every status word, verdicts for every outcome,
and a summary of logs from two device calls (the later one wins)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "gpu"))
import summarize  # noqa: E402

CTEST_LOG = """\
NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04
Test project /repo/build-gpu
      Start 133: CudaDevicePlumbing.DescribesEachDevice
 1/6 Test #133: CudaDevicePlumbing.DescribesEachDevice ..........   Passed    0.31 sec
 2/6 Test #134: ModelOpsTwin.EmbeddingGathersEveryDtypeExactly ....   Passed    0.40 sec
 3/6 Test #151: Shapes/AttentionTwin.MatchesCpuOnRaggedBatch/H8_K2_D64_bs16 ...***Failed    1.20 sec
 4/6 Test #132: CudaCopyFrom.BetweenTwoDevices ....................***Skipped   0.01 sec
 5/6 Test #141: SamplingTwin.StandardizeMatchesCpuOnMixedRows .....***Timeout 120.02 sec
 6/6 Test #143: SamplingTwin.ArgmaxMatchesCpu .....................***Exception: SegFault  0.20 sec

50% tests passed, 3 tests failed out of 6
"""

SKIPPED_LOG = """\
no nvidia-smi on this machine
1/2 Test #161: StepGraphsSelfCheck.ReplayedStepsGiveTheLogitsOfOpByOpSteps ...***Skipped   0.08 sec
2/2 Test #551: transport_nccl_2_ranks ..............................***Skipped   1.10 sec
"""


class Parsing(unittest.TestCase):
    def test_every_status_word(self):
        self.assertEqual(summarize.ctest_results(CTEST_LOG), [
            ("CudaDevicePlumbing.DescribesEachDevice", "passed"),
            ("ModelOpsTwin.EmbeddingGathersEveryDtypeExactly", "passed"),
            ("Shapes/AttentionTwin.MatchesCpuOnRaggedBatch/H8_K2_D64_bs16", "failed: Failed"),
            ("CudaCopyFrom.BetweenTwoDevices", "skipped"),
            ("SamplingTwin.StandardizeMatchesCpuOnMixedRows", "failed: Timeout"),
            ("SamplingTwin.ArgmaxMatchesCpu", "failed: Exception: SegFault"),
        ])

    def test_what_each_gpu_test_compares_with(self):
        c = summarize.comparison_of
        self.assertEqual(c("Shapes/AttentionTwin.MatchesCpuOnRaggedBatch/H8_K2_D64_bs16"),
                         "the CPU twin, on the same inputs")
        self.assertEqual(c("ModelOpsTwin.MatmulMatchesForEveryDtypeAndBatchSize"),
                         "the CPU twin, on the same inputs")
        self.assertIn("NumPy", c("Variants/LlamaForward.MatchesNumpyReferenceThroughPagedCache/"
                                 "qwen2_bias_cuda_bf16"))
        self.assertEqual(c("StepGraphsSelfCheck.ReplayedStepsGiveTheLogitsOfOpByOpSteps"),
                         summarize.SELF)
        self.assertEqual(c("Backends/SpeculativeEngineTest.SeededSessionsReplayWhateverTheBatch/"
                           "cuda_self_check"), summarize.SELF)
        self.assertEqual(c("transport_nccl_1_rank_plumbing"), summarize.PLUMBING)
        self.assertIn("exact sums", c("transport_nccl_2_ranks"))
        self.assertIsNone(c("SomeNewGpuTest.ComparesWithNothingItNames"))


class Verdicts(unittest.TestCase):
    def test_failures_are_named(self):
        verdict = summarize.ctest_verdict("twins", CTEST_LOG, 8)
        self.assertTrue(verdict.startswith("twins: FAIL, 2 passed, 3 failed, 1 skipped of 6: "))
        self.assertIn("H8_K2_D64_bs16", verdict)
        self.assertIn("ArgmaxMatchesCpu", verdict)

    def test_all_skipped_is_no_device_and_a_pass_lists_its_skips(self):
        self.assertEqual(summarize.ctest_verdict("graphs", SKIPPED_LOG, 0),
                         "graphs: NO DEVICE, all 2 skipped")
        log = SKIPPED_LOG.replace(
            "ReplayedStepsGiveTheLogitsOfOpByOpSteps ...***Skipped",
            "ReplayedStepsGiveTheLogitsOfOpByOpSteps ...   Passed")
        self.assertEqual(summarize.ctest_verdict("graphs", log, 0),
                         "graphs: PASS, 1 passed, 0 failed, 1 skipped of 2 "
                         "(transport_nccl_2_ranks)")

    def test_out_of_time_and_nothing_run(self):
        self.assertTrue(summarize.ctest_verdict("engine", SKIPPED_LOG, 124)
                        .startswith("engine: TIMEOUT, "))
        self.assertTrue(summarize.ctest_verdict("engine", SKIPPED_LOG, 137)
                        .startswith("engine: TIMEOUT, "))
        self.assertEqual(summarize.ctest_verdict(
            "engine", "no nvidia-smi\n" + summarize.NOT_STARTED + "\n", 124),
            "engine: TIMEOUT, not started: no time left before TANDEM_DEADLINE")
        # ctest failing without a failed line (it crashed, or was stopped) is no pass.
        self.assertTrue(summarize.ctest_verdict("engine", SKIPPED_LOG, 1)
                        .startswith("engine: FAIL, 0 passed, 0 failed, 2 skipped of 2, but ctest"))
        self.assertTrue(summarize.ctest_verdict("engine", "No tests were found!!!\n", 8)
                        .startswith("engine: FAIL, no test ran"))

    def test_sanitizer(self):
        clean = ("[==========] 30 tests from 5 test suites ran. (9000 ms total)\n"
                 "[  PASSED  ] 30 tests.\n========= ERROR SUMMARY: 0 errors\n")
        self.assertEqual(summarize.sanitizer_verdict("memcheck", clean, 0),
                         "memcheck: PASS, 0 errors reported, 30 cases ran, 0 failed, 0 skipped")
        dirty = clean.replace("0 errors", "3 errors")
        self.assertTrue(summarize.sanitizer_verdict("memcheck", dirty, 99)
                        .startswith("memcheck: FAIL, 3 errors reported"))
        no_device = ("[==========] 30 tests from 5 test suites ran. (3 ms total)\n"
                     "[  SKIPPED ] 30 tests, listed below:\n========= ERROR SUMMARY: 0 errors\n")
        self.assertTrue(summarize.sanitizer_verdict("memcheck", no_device, 0)
                        .startswith("memcheck: NO DEVICE"))
        self.assertTrue(summarize.sanitizer_verdict("racecheck", "", 124)
                        .startswith("racecheck: TIMEOUT"))
        self.assertTrue(summarize.sanitizer_verdict("racecheck", "", 137)
                        .startswith("racecheck: TIMEOUT"))

    def test_racecheck_has_its_own_summary_line(self):
        tail = ("[==========] 30 tests from 5 test suites ran. (9000 ms total)\n"
                "[  PASSED  ] 29 tests.\n[  SKIPPED ] 1 test, listed below:\n"
                "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")
        self.assertEqual(summarize.sanitizer_verdict("racecheck", tail, 0),
                         "racecheck: PASS, 0 errors reported, 30 cases ran, 0 failed, 1 skipped")
        hazards = tail.replace("0 hazards displayed (0 errors, 0 warnings)",
                               "5 hazards displayed (2 errors, 3 warnings)")
        self.assertEqual(summarize.sanitizer_verdict("racecheck", hazards, 99),
                         "racecheck: FAIL, 2 errors reported, 3 warnings, 30 cases ran, 0 failed, "
                         "1 skipped (exit status 99)")
        self.assertTrue(summarize.sanitizer_verdict("memcheck", "compute-sanitizer: not found", 127)
                        .startswith("memcheck: NO TOOL"))


class Summary(unittest.TestCase):
    def test_two_calls_make_one_summary(self):
        with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
            def write(directory, name, text):
                with open(os.path.join(directory, name), "w") as f:
                    f.write(text)
            write(first, "verdicts.txt", "build: OK, 0 warnings [90 s]\ntwins: FAIL, old [9 s]\n")
            write(first, "twins.log", CTEST_LOG)
            write(second, "verdicts.txt", "twins: PASS, rerun [8 s]\ngraphs: NO DEVICE, x [1 s]\n")
            write(second, "graphs.log", SKIPPED_LOG)
            text = summarize.summary([first, second])
        self.assertIn("  build: OK, 0 warnings [90 s]", text)
        self.assertIn("  twins: PASS, rerun [8 s]", text)  # the later call wins
        self.assertNotIn("twins: FAIL, old", text)
        self.assertIn("  memcheck: NOT RUN", text)
        self.assertIn("  the CPU twin, on the same inputs: 1 passed, 3 failed, 0 skipped", text)
        self.assertIn("      failed: Timeout: SamplingTwin.StandardizeMatchesCpuOnMixedRows", text)
        self.assertIn(f"  {summarize.SELF}: 0 passed, 0 failed, 1 skipped", text)
        self.assertIn("  the values copied, exactly: 0 passed, 0 failed, 1 skipped", text)
        # Plumbing and self checks are not counted as checks of the GPU's numbers.
        self.assertIn("against the CPU or an independent reference: 1 test cases passed", text)


if __name__ == "__main__":
    unittest.main()
