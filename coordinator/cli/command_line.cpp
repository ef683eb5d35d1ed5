#include "coordinator/cli/command_line.h"

#include <algorithm>
#include <cstdlib>
#include <ostream>

#include "common/error.h"

namespace tandem::cli {
namespace {

// "tandem serve": the program and the subcommand chosen, for messages.
std::string command_name(const std::string& program, const CLI::App& app) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  return chosen.empty() ? program : program + " " + chosen.front()->get_name();
}

}  // namespace

CommandLine::CommandLine(const std::string& program, const std::string& description)
    : program_(program), app_(std::make_unique<CLI::App>(description, program)) {
  // Every flag's default is shown in --help; a flag given twice keeps the
  // last value (as scripts that append an override expect).
  app_->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app_->set_help_flag("-h,--help", "print this help and exit");
}

CLI::App& CommandLine::add_command(const std::string& name, const std::string& description,
                                   const std::function<Run(CLI::App&)>& define) {
  CLI::App* command = app_->add_subcommand(name, description);
  command->set_help_flag("-h,--help", "print this help and exit");
  runs_[command] = define(*command);
  app_->require_subcommand(0, 1);
  return *command;
}

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

CLI::Option* add_number_list(CLI::App& app, const std::string& name, std::string& text,
                             const std::string& description) {
  const CLI::Validator numbers(
      [](std::string& given) -> std::string {
        return numbers_of(given) ? "" : "wants comma-separated numbers, got '" + given + "'";
      },
      "");
  return app.add_option(name, text, description)->check(numbers)->type_name("N[,N...]");
}

CLI::Option* add_switch(CLI::App& app, const std::string& name, bool& on,
                        const std::string& description) {
  return app.add_flag(name, on, description)->disable_flag_override();
}

}  // namespace tandem::cli
