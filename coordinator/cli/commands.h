// The `tandem` subcommands. Each takes the words after its name and returns
// the process exit code; errors are thrown as tandem::Error and reported by
// main() in one place.
#pragma once

#include <string>
#include <vector>

namespace tandem::cli {

using Words = std::vector<std::string>;

int generate_command(const Words& args);  // generate_command.cpp
int tokenize_command(const Words& args);  // tokenize_command.cpp
int bench_command(const Words& args);     // bench_command.cpp
int bench_matmul(const Words& args);       // bench_matmul.cpp (a suite of bench)
int bench_speculative(const Words& args);  // bench_speculative.cpp (a suite of bench)
int bench_steps(const Words& args);        // bench_steps.cpp (a suite of bench)
int bench_batching(const Words& args);     // bench_batching.cpp (a suite of bench)
int bench_pipeline(const Words& args);     // bench_pipeline.cpp (a suite of bench)
int bench_tensor_parallel(const Words& args);  // bench_tensor_parallel.cpp (under mpirun)
int serve_command(const Words& args);     // serve_command.cpp
int loadtest_command(const Words& args);  // loadtest_command.cpp

}  // namespace tandem::cli
