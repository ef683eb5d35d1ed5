// tandem-soak: minutes of mixed traffic against a running server, asserting
// it stays healthy (tools/soak/README.md); `tandem-soak --help` lists the flags.
#include <iostream>
#include <memory>

#include "tools/soak/cli/soak_flags.h"

int main(int argc, char** argv) {
  using namespace tandem;
  cli::CommandLine cli("tandem-soak",
                       "Mixed traffic against a running Tandem server for a while, asserting no "
                       "unexpected 5xx, bounded RSS, /health answering and the server idle again "
                       "afterwards (tools/soak/README.md).");
  auto flags = std::make_shared<soak::SoakFlags>();
  soak::add_soak_flags(cli.program(), *flags);
  cli.set_run([flags] { return soak::run_soak_command(*flags); });
  return cli.run(cli::words_of(argc, argv), std::cout, std::cerr);
}
