#include "coordinator/cli/args.h"

#include <algorithm>
#include <cstdlib>

#include "common/error.h"

namespace tandem::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
           const std::set<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word.rfind("--", 0) != 0) {
      positional_.push_back(word);
      continue;
    }
    std::string name = word.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      tandem::require(!value, ErrorKind::invalid_argument, "option --" + name + " takes no value");
      values_[name] = "1";
    } else if (options.count(name)) {
      if (!value) {
        tandem::require(i + 1 < argv.size(), ErrorKind::invalid_argument,
                "option --" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = *value;
    } else {
      throw Error(ErrorKind::invalid_argument,
                  "unknown option --" + name + " (see `tandem help`)");
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string Args::require(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw Error(ErrorKind::invalid_argument, "missing required option --" + name);
  return it->second;
}

long Args::get_int(const std::string& name, long fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    throw Error(ErrorKind::invalid_argument, "--" + name + " wants an integer, got '" + text + "'");
  return value;
}

double Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw Error(ErrorKind::invalid_argument, "--" + name + " wants a number, got '" + text + "'");
  return value;
}

std::vector<double> Args::get_numbers(const std::string& name, const std::string& fallback) const {
  const std::string text = get(name, fallback);
  std::vector<double> numbers;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0')
      throw Error(ErrorKind::invalid_argument,
                  "--" + name + " wants comma-separated numbers, got '" + text + "'");
    numbers.push_back(value);
    start = comma + 1;
  }
  return numbers;
}

}  // namespace tandem::cli
