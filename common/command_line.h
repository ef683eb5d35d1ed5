// CommandLine: the command-line plumbing every Tandem binary shares
// (`tandem`, `tandem-bench`, `tandem-loadtest`), so that all three answer the
// same way: --help/-h prints usage with each flag's default and exits 0; an
// unknown flag, a stray argument or a malformed value exits 2 with a message
// naming it; an Error from the command exits 2 (invalid_argument) or 1.
//
// It is built on CLI11, which only command_line.cpp includes: CLI11 is one
// large header, and the commands declare their flags through Command and
// Flag below, so the two dozen files that do need not parse it each time.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tandem::cli {

// One declared flag, refined in a chain: add_value(...).type_name("FILE").required().
class Flag {
 public:
  explicit Flag(CLI::Option* option) : option_(option) {}
  Flag& type_name(const std::string& name);  // the value's name in --help
  Flag& required();                          // missing: an error (exit 2)
  Flag& excludes(const Flag& other);         // both given: an error (exit 2)

 private:
  CLI::Option* option_;
};

// A command's flags, as the command's define function declares them.
class Command {
 public:
  explicit Command(CLI::App& app) : app_(&app) {}
  CLI::App& app() { return *app_; }  // for command_line.cpp, which knows CLI11
  // Text printed after the flags in --help.
  void footer(const std::string& text);

 private:
  CLI::App* app_;
};

// What a parsed command line runs; returns the process exit code.
using Run = std::function<int()>;

class CommandLine {
 public:
  CommandLine(const std::string& program, const std::string& description);

  ~CommandLine();
  CommandLine(CommandLine&&) noexcept;
  // The program's own flags (for a program without subcommands).
  Command& program() { return program_command_; }
  // A subcommand: define registers its flags on it and returns what runs
  // when it is chosen (the flags' storage lives in what define captures).
  void add_command(const std::string& name, const std::string& description,
                   const std::function<Run(Command&)>& define);
  // For a program without subcommands: what runs once its flags are parsed.
  void set_run(Run run);

  // Parses args (argv without argv[0]) and runs what they name; the exit code.
  int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  // Only parses: 0 when a command is ready to run (run_parsed()), else the
  // exit code (0 after --help, 2 after an error), its text written to out/err.
  int parse(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  int run_parsed(std::ostream& err);

 private:
  std::string program_;
  std::unique_ptr<CLI::App> app_;
  Command program_command_;
  std::map<const CLI::App*, Run> runs_;
  const CLI::App* chosen_ = nullptr;
};

// argv[1..argc) as words.
std::vector<std::string> words_of(int argc, char** argv);

// Comma-separated numbers ("1,4,16"); Error(invalid_argument) naming flag.
std::vector<double> parse_number_list(const std::string& flag, const std::string& text);
// A flag taking such a list, kept as text for parse_number_list; a
// malformed list is refused when the flags are parsed (exit 2).
Flag add_number_list(Command& command, const std::string& name, std::string& text,
                     const std::string& description);

// add_value(command, "--max-tokens", value, "what it is"): a flag with a
// value and its default shown in --help. Numbers refuse an empty value (""
// would read as 0), as every malformed value is refused. T is one of the
// types command_line.cpp instantiates (strings, integers, floating point,
// and std::optional of those): another is a link error.
template <typename T>
Flag add_value(Command& command, const std::string& name, T& value,
               const std::string& description);

// add_switch(command, "--stats", on, "what it does"): a flag without a value
// (`--stats=1` is refused, not read as a value).
Flag add_switch(Command& command, const std::string& name, bool& on,
                const std::string& description);

}  // namespace tandem::cli
