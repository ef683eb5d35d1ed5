// Args: the small command-line parser every `tandem` subcommand uses.
//
// Accepts `--name value`, `--name=value` and bare `--flag`. Unknown options are
// an error naming the option, so a typo never silently falls back to a default.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tandem::cli {

class Args {
 public:
  // options: names taking a value; flags: names that take none (no "--").
  Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
       const std::set<std::string>& flags);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  std::string require(const std::string& name) const;  // throws naming --name
  long get_int(const std::string& name, long fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // A comma-separated list of numbers, e.g. --batches 1,4,16.
  std::vector<double> get_numbers(const std::string& name, const std::string& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace tandem::cli
