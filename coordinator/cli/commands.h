// The `tandem` commands: serve, generate, tokenize, chat-template. Each define_* registers
// a command's flags on its CLI11 subcommand and returns what runs once they
// are parsed; errors are thrown as tandem::Error and reported by
// CommandLine in one place. Benchmarks are `tandem-bench` (tools/bench/),
// the load generator `tandem-loadtest` (tools/loadtest/).
#pragma once

#include "common/command_line.h"

namespace tandem::cli {

Run define_serve(Command& command);     // serve_command.cpp
Run define_generate(Command& command);  // generate_command.cpp
Run define_tokenize(Command& command);  // tokenize_command.cpp
Run define_chat_template(Command& command);  // chat_template_command.cpp

// The whole `tandem` command line, every command registered (commands.cpp).
CommandLine tandem_command_line();

}  // namespace tandem::cli
