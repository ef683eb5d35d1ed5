// CommandLine: the CLI11 plumbing every Tandem binary shares (`tandem`,
// `tandem-bench`, `tandem-loadtest`), so that all three answer the same way:
// --help/-h prints usage with each flag's default and exits 0; an unknown
// flag, a stray argument or a malformed value exits 2 with a message naming
// it; an Error from the command exits 2 (invalid_argument) or 1.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tandem::cli {

// What a parsed command line runs; returns the process exit code.
using Run = std::function<int()>;

class CommandLine {
 public:
  CommandLine(const std::string& program, const std::string& description);

  CLI::App& app() { return *app_; }
  // A subcommand: define registers its flags on it and returns what runs
  // when it is chosen (the flags' storage lives in what define captures).
  CLI::App& add_command(const std::string& name, const std::string& description,
                        const std::function<Run(CLI::App&)>& define);
  // For a program without subcommands: what runs once its flags are parsed.
  void set_run(Run run) { runs_[app_.get()] = std::move(run); }

  // Parses args (argv without argv[0]) and runs what they name; the exit code.
  int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  // Only parses: 0 when a command is ready to run (run_parsed()), else the
  // exit code (0 after --help, 2 after an error), its text written to out/err.
  int parse(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  int run_parsed(std::ostream& err);

 private:
  std::string program_;
  std::unique_ptr<CLI::App> app_;
  std::map<const CLI::App*, Run> runs_;
  const CLI::App* chosen_ = nullptr;
};

// argv[1..argc) as words.
std::vector<std::string> words_of(int argc, char** argv);

// Comma-separated numbers ("1,4,16"); Error(invalid_argument) naming flag.
std::vector<double> parse_number_list(const std::string& flag, const std::string& text);
// A flag taking such a list, kept as text for parse_number_list; a
// malformed list is refused when the flags are parsed (exit 2).
CLI::Option* add_number_list(CLI::App& app, const std::string& name, std::string& text,
                             const std::string& description);

// add_value(app, "--max-tokens", value, "what it is"): a flag with a value
// and its default shown in --help. Numbers refuse an empty value ("" would
// read as 0), as every malformed value is refused.
template <typename T>
inline constexpr bool kIsNumber = std::is_arithmetic_v<T>;
template <typename T>
inline constexpr bool kIsNumber<std::optional<T>> = std::is_arithmetic_v<T>;

template <typename T>
CLI::Option* add_value(CLI::App& app, const std::string& name, T& value,
                       const std::string& description) {
  CLI::Option* option = app.add_option(name, value, description);
  if constexpr (kIsNumber<T>) {
    option->check(CLI::Validator(CLI::Number).description(""));
  }
  return option;
}

// add_switch(app, "--stats", on, "what it does"): a flag without a value
// (`--stats=1` is refused, not read as a value).
CLI::Option* add_switch(CLI::App& app, const std::string& name, bool& on,
                        const std::string& description);

}  // namespace tandem::cli
