// tandem: the serving binary, `serve`, `generate`, `tokenize` and `chat-template`
// (commands.h); `tandem --help` lists them, `tandem COMMAND --help` a
// command's flags.
#include <iostream>
#include <string>

#include "coordinator/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> words = tandem::cli::words_of(argc, argv);
  // `tandem help` (the old spelling) is `tandem --help`.
  if (words.size() == 1 && words[0] == "help") words[0] = "--help";
  return tandem::cli::tandem_command_line().run(words, std::cout, std::cerr);
}
