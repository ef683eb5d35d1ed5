// ConfigSection: one YAML map of a config file, read strictly.
//
// yaml-cpp hands back whatever the file says; this is the one place that
// decides what a config value may look like. Every read names its key, checks
// the type (an integer is digits only: "1.5", "0x10" and a quoted "8080" are
// not integers) and the range, and every failure is an Error(invalid_argument)
// reading "FILE:LINE: full.key.path: what is wrong". Lines are those of the
// key, which is where a reader of the file looks.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::config {

// A range of real numbers, each end open or closed; an infinite end is no bound.
struct Interval {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;
  bool high_open = false;

  bool contains(double value) const;
  std::string describe() const;  // "in (0, 1]", "> 0", ">= 0"
};

class ConfigSection {
 public:
  // The top level of a parsed document; text is the document as written (for
  // checks yaml-cpp does not make). Rejects anything but a map.
  static ConfigSection root(const YAML::Node& node, const std::string& source,
                            std::shared_ptr<const std::string> text);

  const std::string& path() const { return path_; }  // "" for the top level
  const std::string& source() const { return source_; }  // the file, for located()
  std::string path_of(std::string_view key) const;   // "server.port"
  bool has(std::string_view key) const;
  // 1-based line of key; of this section's own key when key is absent (0 = none).
  int line_of(std::string_view key) const;

  // Rejects any key not in known, listing the known ones.
  void allow_only(const std::vector<std::string>& known) const;

  // A nested map; nullopt when absent. An empty value (`draft:` alone) reads
  // as an empty map; a scalar or a list is an error.
  std::optional<ConfigSection> section(std::string_view key) const;
  // The same, with an absent section read as an empty one (all defaults).
  ConfigSection section_or_empty(std::string_view key) const;

  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t low,
                       std::int64_t high) const;
  // A list of integers, each in [low, high] ([2, 3] or a block list);
  // fallback when absent. An element's error names key[index].
  std::vector<std::int64_t> integer_list(std::string_view key,
                                         const std::vector<std::int64_t>& fallback,
                                         std::int64_t low, std::int64_t high) const;
  // A list of one-line, non-empty strings; nullopt when absent. An element's
  // error names key[index].
  std::optional<std::vector<std::string>> text_list(std::string_view key) const;
  double number(std::string_view key, double fallback, const Interval& allowed) const;
  std::string text(std::string_view key, const std::string& fallback) const;
  // text() restricted to a set of words.
  std::string word(std::string_view key, const std::string& fallback,
                   const std::vector<std::string>& allowed) const;
  // The scalar's text as written, for keys that take more than one form
  // ("auto" or an integer); nullopt when absent. expected names the forms
  // in the error for a map, a list or an empty value.
  std::optional<std::string> scalar(std::string_view key, const char* expected) const;
  // Parses a scalar of key as an integer in [low, high], for scalar() users;
  // expected names the accepted forms when it is not an integer.
  std::int64_t to_integer(std::string_view key, const std::string& written, std::int64_t low,
                          std::int64_t high, const char* expected = "an integer") const;

  // Throws "FILE:LINE: path.key: message" with the line of key.
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  // The same at another key's line: for a missing key that another one implies
  // ("shape" is required because of "load_format: dummy").
  [[noreturn]] void fail(std::string_view key, const std::string& message,
                         std::string_view at_line_of) const;

 private:
  struct Entry {
    std::string name;
    YAML::Node key;
    YAML::Node value;
  };

  ConfigSection(const YAML::Node& map, std::string path, int line, std::string source,
                std::shared_ptr<const std::string> text);
  const Entry* find(std::string_view key) const;
  // The scalar of key, or an error saying it is `expected` and what it got.
  const YAML::Node* require_scalar(std::string_view key, const char* expected) const;

  std::string source_;
  std::shared_ptr<const std::string> text_;
  std::string path_;
  int line_ = 0;  // of the key naming this section
  std::vector<Entry> entries_;
};

// Line `line` (0-based) of text, without its newline; "" past the end.
std::string_view line_of_text(std::string_view text, int line);

// "FILE:LINE: what" (or "FILE: what" when line is 0).
std::string located(const std::string& source, int line, const std::string& what);

}  // namespace tandem::config
