// tandem-loadtest: throughput and latency of an OpenAI-compatible completions
// or chat endpoint; `tandem-loadtest --help` lists the flags (loadtest_flags.h).
#include <iostream>
#include <memory>

#include "tools/loadtest/cli/loadtest_flags.h"

int main(int argc, char** argv) {
  using namespace tandem;
  cli::CommandLine cli("tandem-loadtest",
                       "Throughput and latency of an OpenAI-compatible completions or chat endpoint "
                       "(ours or a peer's), in vLLM `bench serve`'s terms "
                       "(tools/loadtest/README.md).");
  auto flags = std::make_shared<loadtest::LoadtestFlags>();
  loadtest::add_loadtest_flags(cli.program(), *flags);
  cli.set_run([flags] { return loadtest::run_loadtest(*flags); });
  return cli.run(cli::words_of(argc, argv), std::cout, std::cerr);
}
