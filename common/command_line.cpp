#include "common/command_line.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <type_traits>

#include "common/error.h"

namespace tandem::cli {
namespace {

// "tandem serve": the program and the subcommand chosen, for messages.
std::string command_name(const std::string& program, const CLI::App& app) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  return chosen.empty() ? program : program + " " + chosen.front()->get_name();
}

}  // namespace

Flag& Flag::type_name(const std::string& name) {
  option_->type_name(name);
  return *this;
}

Flag& Flag::required() {
  option_->required();
  return *this;
}

Flag& Flag::excludes(const Flag& other) {
  option_->excludes(other.option_);
  return *this;
}

void Command::footer(const std::string& text) { app_->footer(text); }

CommandLine::CommandLine(const std::string& program, const std::string& description)
    : program_(program),
      app_(std::make_unique<CLI::App>(description, program)),
      program_command_(*app_) {
  // Every flag's default is shown in --help; a flag given twice keeps the
  // last value (as scripts that append an override expect).
  app_->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app_->set_help_flag("-h,--help", "print this help and exit");
}

CommandLine::~CommandLine() = default;
CommandLine::CommandLine(CommandLine&&) noexcept = default;

void CommandLine::add_command(const std::string& name, const std::string& description,
                              const std::function<Run(Command&)>& define) {
  CLI::App* app = app_->add_subcommand(name, description);
  app->set_help_flag("-h,--help", "print this help and exit");
  Command command(*app);
  runs_[app] = define(command);
  app_->require_subcommand(0, 1);
}

void CommandLine::set_run(Run run) { runs_[app_.get()] = std::move(run); }

int CommandLine::parse(const std::vector<std::string>& args, std::ostream& out,
                       std::ostream& err) {
  chosen_ = nullptr;
  if (args.empty() && !app_->get_subcommands({}).empty()) {
    // No command at all: the usage, as an error (a script that forgot its
    // command must not look like it succeeded).
    err << app_->help();
    return 2;
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
    app_->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app_->help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app_->help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& error) {
    const std::string name = command_name(program_, *app_);
    err << name << ": " << error.what() << " (see `" << name << " --help`)\n";
    return 2;
  }
  const std::vector<CLI::App*> chosen = app_->get_subcommands();
  chosen_ = chosen.empty() ? app_.get() : chosen.front();
  if (!runs_.count(chosen_)) {
    err << program_ << ": a command is needed (see `" << program_ << " --help`)\n";
    chosen_ = nullptr;
    return 2;
  }
  return 0;
}

int CommandLine::run_parsed(std::ostream& err) {
  const std::string name = command_name(program_, *app_);
  try {
    return runs_.at(chosen_)();
  } catch (const Error& error) {
    err << name << ": error: " << error.what() << "\n";
    return error.kind() == ErrorKind::invalid_argument ? 2 : 1;
  } catch (const std::exception& error) {
    err << name << ": internal error: " << error.what() << "\n";
    return 1;
  }
}

int CommandLine::run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (const int code = parse(args, out, err); code != 0 || chosen_ == nullptr) return code;
  return run_parsed(err);
}

std::vector<std::string> words_of(int argc, char** argv) {
  return std::vector<std::string>(argv + std::min(argc, 1), argv + argc);
}

namespace {

// The numbers of "1,4,16"; nullopt when an item is empty or not a number.
std::optional<std::vector<double>> numbers_of(const std::string& text) {
  std::vector<double> numbers;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0') return std::nullopt;
    numbers.push_back(value);
    start = comma + 1;
  }
  return numbers;
}

}  // namespace

std::vector<double> parse_number_list(const std::string& flag, const std::string& text) {
  std::optional<std::vector<double>> numbers = numbers_of(text);
  if (!numbers) {
    throw Error(ErrorKind::invalid_argument,
                flag + " wants comma-separated numbers, got '" + text + "'");
  }
  return *numbers;
}

Flag add_number_list(Command& command, const std::string& name, std::string& text,
                     const std::string& description) {
  const CLI::Validator numbers(
      [](std::string& given) -> std::string {
        return numbers_of(given) ? "" : "wants comma-separated numbers, got '" + given + "'";
      },
      "");
  return Flag(
      command.app().add_option(name, text, description)->check(numbers)->type_name("N[,N...]"));
}

Flag add_switch(Command& command, const std::string& name, bool& on,
                const std::string& description) {
  return Flag(command.app().add_flag(name, on, description)->disable_flag_override());
}

namespace {

template <typename T>
inline constexpr bool kIsNumber = std::is_arithmetic_v<T>;
template <typename T>
inline constexpr bool kIsNumber<std::optional<T>> = std::is_arithmetic_v<T>;

}  // namespace

template <typename T>
Flag add_value(Command& command, const std::string& name, T& value,
               const std::string& description) {
  CLI::Option* option = command.app().add_option(name, value, description);
  if constexpr (kIsNumber<T>) {
    option->check(CLI::Validator(CLI::Number).description(""));
  }
  return Flag(option);
}

// The value types Tandem's flags use (add_value's comment in the header).
#define TANDEM_FLAG_TYPE(T)                                                      \
  template Flag add_value<T>(Command&, const std::string&, T&, const std::string&); \
  template Flag add_value<std::optional<T>>(Command&, const std::string&, std::optional<T>&, \
                                            const std::string&);
TANDEM_FLAG_TYPE(std::string)
TANDEM_FLAG_TYPE(int)
TANDEM_FLAG_TYPE(long)
TANDEM_FLAG_TYPE(long long)
TANDEM_FLAG_TYPE(unsigned)
TANDEM_FLAG_TYPE(unsigned long)
TANDEM_FLAG_TYPE(unsigned long long)
TANDEM_FLAG_TYPE(float)
TANDEM_FLAG_TYPE(double)
#undef TANDEM_FLAG_TYPE

}  // namespace tandem::cli
