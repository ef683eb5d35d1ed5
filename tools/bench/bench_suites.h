// The `tandem-bench` suites, one file each; main.cpp registers them as
// subcommands. Each define_* registers its flags (the model flags of
// coordinator/models/model_flags.h, where it loads models, and its own) and
// returns what runs once they are parsed. Benchmarks print numbers and
// assert nothing; docs/benchmarks.md keeps the results.
#pragma once

#include "common/command_line.h"

namespace tandem::bench {

cli::Run define_forward(cli::Command& command);          // bench_forward.cpp
cli::Run define_matmul(cli::Command& command);           // bench_matmul.cpp
cli::Run define_speculative(cli::Command& command);      // bench_speculative.cpp
cli::Run define_coupling(cli::Command& command);         // bench_coupling.cpp
cli::Run define_steps(cli::Command& command);            // bench_steps.cpp
cli::Run define_step_profile(cli::Command& command);     // bench_step_profile.cpp
cli::Run define_batching(cli::Command& command);         // bench_batching.cpp
cli::Run define_pipeline(cli::Command& command);         // bench_pipeline.cpp
cli::Run define_tensor_parallel(cli::Command& command);  // bench_tensor_parallel.cpp (under mpirun)

}  // namespace tandem::bench
