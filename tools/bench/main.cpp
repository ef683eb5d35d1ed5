// tandem-bench: the benchmarks, one subcommand per suite (bench_suites.h);
// `tandem-bench --help` lists them, `tandem-bench SUITE --help` a suite's flags.
#include <iostream>

#include "tools/bench/bench_suites.h"

int main(int argc, char** argv) {
  using namespace tandem::bench;
  tandem::cli::CommandLine cli(
      "tandem-bench",
      "Tandem's benchmarks: each prints numbers on this machine and asserts nothing "
      "(tools/bench/README.md; results in docs/benchmarks.md).");
  cli.add_command("forward", "decode and prefill throughput of one model", define_forward);
  cli.add_command("matmul", "our CPU matmul vs OpenBLAS sgemm, side by side", define_matmul);
  cli.add_command("speculative", "alpha, c, measured and predicted speed-up per gamma",
                  define_speculative);
  cli.add_command("coupling",
                  "rejection vs the Gumbel coupling per temperature and gamma: alpha beside "
                  "its bound, speed-up, outputs equal to plain decoding (run with --threads 1 on a "
                  "shared machine)",
                  define_coupling);
  cli.add_command("steps", "v(k): the cost of k new tokens per sequence vs 1; c of a draft",
                  define_steps);
  cli.add_command("step-profile",
                  "where an engine step's time goes: draft, forward, verify, the rest; plain "
                  "decoding and fixed gammas side by side",
                  define_step_profile);
  cli.add_command("batching", "speculation off / fixed gamma / auto at each batch size",
                  define_batching);
  cli.add_command("pipeline",
                  "pipelined vs lockstep drafting, the draft on its own thread (run with "
                  "--threads 1)",
                  define_pipeline);
  cli.add_command("tensor-parallel",
                  "TP 1 vs TP N step times, communication apart (under mpirun -np N)",
                  define_tensor_parallel);
  cli.program().footer(
      "Models run on --backend cpu (default) or --backend cuda [--device N] [--weight-dtype "
      "auto|bf16|fp16|fp32] (auto by default: as the checkpoints store the weights when that is "
      "bf16 or fp16, else fp32 on cpu and bf16 on cuda; docs/gpu.md).");
  return cli.run(tandem::cli::words_of(argc, argv), std::cout, std::cerr);
}
