#include "coordinator/config/config_section.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <utility>

#include "common/error.h"

namespace tandem::config {
namespace {

// yaml-cpp tags a plain (unquoted) scalar "?" and a quoted or block one "!".
bool is_plain(const YAML::Node& node) {
  return node.Tag() == "?";
}

int line_of_node(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

enum class Parsed { ok, malformed, out_of_range };

// Decimal digits with an optional sign, nothing else: YAML's own integer forms
// (0x1F, 0o17, 1_000) are refused so that a config means the same to every reader.
Parsed parse_integer(std::string_view text, std::int64_t& out) {
  const bool signed_ = !text.empty() && (text.front() == '+' || text.front() == '-');
  if (text.size() == (signed_ ? 1u : 0u)) return Parsed::malformed;
  for (std::size_t i = signed_ ? 1 : 0; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return Parsed::malformed;
  }
  if (text.front() == '+') text.remove_prefix(1);  // from_chars takes '-' only
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error == std::errc::result_out_of_range) return Parsed::out_of_range;
  return error == std::errc() && end == text.data() + text.size() ? Parsed::ok : Parsed::malformed;
}

Parsed parse_real(std::string_view text, double& out) {
  // from_chars takes an optional '-' but no '+'; YAML allows either, once.
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  if (error != std::errc() || end != text.data() + text.size()) return Parsed::malformed;
  return std::isfinite(out) ? Parsed::ok : Parsed::out_of_range;
}

std::string join(const std::vector<std::string>& words) {
  std::string joined;
  for (const std::string& word : words) joined += (joined.empty() ? "" : ", ") + word;
  return joined;
}

// Levenshtein distance, for "did you mean" on misspelt keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Whether a quoted scalar starting at mark ends on the same line. yaml-cpp
// 0.7 lets a double quote left open run to the end of the file, folding every
// line after it into one value; a config value never spans lines.
bool quote_closes_on_its_line(std::string_view text, const YAML::Mark& mark) {
  if (mark.is_null()) return true;
  const std::string_view line = line_of_text(text, mark.line);
  const std::size_t open = static_cast<std::size_t>(mark.column);
  if (open >= line.size() || (line[open] != '"' && line[open] != '\''))
    return true;  // not a quote: can't tell
  const char quote = line[open];
  for (std::size_t i = open + 1; i < line.size(); ++i) {
    if (quote == '"' && line[i] == '\\') {
      ++i;  // an escaped character, perhaps a quote
    } else if (line[i] == quote) {
      if (quote == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
        ++i;  // '' is a single quote inside single quotes
      } else {
        return true;
      }
    }
  }
  return false;
}

// How a node reads in a message: `"many"`, `a list`, `an empty value`.
std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: return "an empty value";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Scalar:
      return (is_plain(node) ? "\"" : "the quoted string \"") + node.Scalar() + "\"";
  }
  return "an unknown YAML node";
}

}  // namespace

bool Interval::contains(double value) const {
  const bool above_low = low_open ? value > low : value >= low;
  const bool below_high = high_open ? value < high : value <= high;
  return above_low && below_high;
}

std::string Interval::describe() const {
  if (std::isinf(high)) return (low_open ? "> " : ">= ") + format_number(low);
  return std::string("in ") + (low_open ? "(" : "[") + format_number(low) + ", " +
         format_number(high) + (high_open ? ")" : "]");
}

std::string_view line_of_text(std::string_view text, int line) {
  std::size_t begin = 0;
  for (int i = 0; i < line; ++i) {
    begin = text.find('\n', begin);
    if (begin == std::string_view::npos) return {};
    ++begin;
  }
  const std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

std::string located(const std::string& source, int line, const std::string& what) {
  return source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what;
}

ConfigSection ConfigSection::root(const YAML::Node& node, const std::string& source,
                                  std::shared_ptr<const std::string> text) {
  if (!node.IsMap()) {
    throw Error(ErrorKind::invalid_argument,
                located(source, line_of_node(node),
                        "the top level must be a map of sections (server:, models:, ...), got " +
                            describe_node(node)));
  }
  return ConfigSection(node, "", 0, source, std::move(text));
}

ConfigSection::ConfigSection(const YAML::Node& map, std::string path, int line, std::string source,
                             std::shared_ptr<const std::string> text)
    : source_(std::move(source)), text_(std::move(text)), path_(std::move(path)), line_(line) {
  if (map.IsNull()) return;  // `section:` with nothing under it: no keys
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const int key_line = line_of_node(key);
    if (!key.IsScalar()) {
      throw Error(ErrorKind::invalid_argument,
                  located(source_, key_line,
                          (path_.empty() ? "top level" : path_) + ": keys must be names, got " +
                              describe_node(key)));
    }
    if (const Entry* first = find(key.Scalar())) {
      throw Error(ErrorKind::invalid_argument,
                  located(source_, key_line,
                          path_of(key.Scalar()) + ": duplicate key (first given on line " +
                              std::to_string(line_of_node(first->key)) + ")"));
    }
    entries_.push_back(Entry{key.Scalar(), key, it->second});
  }
}

std::string ConfigSection::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const ConfigSection::Entry* ConfigSection::find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.name == key) return &entry;
  }
  return nullptr;
}

bool ConfigSection::has(std::string_view key) const {
  return find(key) != nullptr;
}

int ConfigSection::line_of(std::string_view key) const {
  const Entry* entry = find(key);
  return entry ? line_of_node(entry->key) : line_;
}

void ConfigSection::fail(std::string_view key, const std::string& message) const {
  throw Error(ErrorKind::invalid_argument,
              located(source_, line_of(key), path_of(key) + ": " + message));
}

void ConfigSection::fail(std::string_view key, const std::string& message,
                         std::string_view at_line_of) const {
  throw Error(ErrorKind::invalid_argument,
              located(source_, line_of(at_line_of), path_of(key) + ": " + message));
}

void ConfigSection::allow_only(const std::vector<std::string>& known) const {
  for (const Entry& entry : entries_) {
    bool is_known = false;
    std::string closest;
    std::size_t closest_distance = 3;  // suggest only near misses: prot, hots, max_token
    for (const std::string& name : known) {
      is_known = is_known || name == entry.name;
      const std::size_t distance = edit_distance(entry.name, name);
      if (distance < closest_distance) closest = name, closest_distance = distance;
    }
    if (is_known) continue;
    fail(entry.name, "unknown key (known keys: " + join(known) + ")" +
                         (closest.empty() ? "" : "; did you mean " + closest + "?"));
  }
}

std::optional<ConfigSection> ConfigSection::section(std::string_view key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  if (!entry->value.IsMap() && !entry->value.IsNull()) {
    fail(key, "expected a map of keys (an indented block under " + std::string(key) + ":), got " +
                  describe_node(entry->value));
  }
  return ConfigSection(entry->value, path_of(key), line_of_node(entry->key), source_, text_);
}

ConfigSection ConfigSection::section_or_empty(std::string_view key) const {
  if (std::optional<ConfigSection> present = section(key)) return *present;
  return ConfigSection(YAML::Node(YAML::NodeType::Null), path_of(key), line_, source_, text_);
}

const YAML::Node* ConfigSection::require_scalar(std::string_view key, const char* expected) const {
  const Entry* entry = find(key);
  if (!entry) return nullptr;
  if (!entry->value.IsScalar()) {
    fail(key, std::string("expected ") + expected + ", got " + describe_node(entry->value));
  }
  return &entry->value;
}

std::int64_t ConfigSection::to_integer(std::string_view key, const std::string& written,
                                       std::int64_t low, std::int64_t high,
                                       const char* expected) const {
  std::int64_t value = 0;
  const Parsed parsed = parse_integer(written, value);
  const bool unbounded =
      high == std::numeric_limits<std::int64_t>::max() || high == std::numeric_limits<int>::max();
  const std::string range = unbounded && parsed == Parsed::ok && value < low
                                ? ">= " + std::to_string(low)
                                : "in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
  if (parsed == Parsed::malformed)
    fail(key, std::string("expected ") + expected + ", got \"" + written + "\"");
  if (parsed == Parsed::out_of_range || value < low || value > high) {
    fail(key, "must be " + range + ", got " + written);
  }
  return value;
}

std::int64_t ConfigSection::integer(std::string_view key, std::int64_t fallback, std::int64_t low,
                                    std::int64_t high) const {
  const YAML::Node* node = require_scalar(key, "an integer");
  if (!node) return fallback;
  if (!is_plain(*node)) {
    fail(key,
         "expected an integer, got " + describe_node(*node) + " (write numbers without quotes)");
  }
  return to_integer(key, node->Scalar(), low, high);
}

std::vector<std::int64_t> ConfigSection::integer_list(std::string_view key,
                                                      const std::vector<std::int64_t>& fallback,
                                                      std::int64_t low, std::int64_t high) const {
  const Entry* entry = find(key);
  if (!entry) return fallback;
  if (!entry->value.IsSequence()) {
    fail(key, "expected a list of integers such as [2, 3], got " + describe_node(entry->value));
  }
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < entry->value.size(); ++i) {
    const YAML::Node element = entry->value[i];
    const std::string name = std::string(key) + "[" + std::to_string(i) + "]";
    if (!element.IsScalar() || !is_plain(element)) {
      fail(key, name + ": expected an integer, got " + describe_node(element));
    }
    std::int64_t value = 0;
    const Parsed parsed = parse_integer(element.Scalar(), value);
    if (parsed == Parsed::malformed) {
      fail(key, name + ": expected an integer, got \"" + element.Scalar() + "\"");
    }
    if (parsed == Parsed::out_of_range || value < low || value > high) {
      fail(key, name + ": must be an integer in [" + std::to_string(low) + ", " +
                    std::to_string(high) + "], got " + element.Scalar());
    }
    values.push_back(value);
  }
  return values;
}

std::optional<std::vector<std::string>> ConfigSection::text_list(std::string_view key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  if (!entry->value.IsSequence()) {
    fail(key, "expected a list of strings such as [a, b], got " + describe_node(entry->value));
  }
  std::vector<std::string> values;
  for (std::size_t i = 0; i < entry->value.size(); ++i) {
    const YAML::Node element = entry->value[i];
    const std::string name = std::string(key) + "[" + std::to_string(i) + "]";
    if (!element.IsScalar() || element.Scalar().empty()) {
      fail(key, name + ": expected a non-empty string, got " + describe_node(element));
    }
    for (const char c : element.Scalar())
      if (static_cast<unsigned char>(c) < 0x20) fail(key, name + ": must be one line without control characters");
    values.push_back(element.Scalar());
  }
  return values;
}

double ConfigSection::number(std::string_view key, double fallback, const Interval& allowed) const {
  const YAML::Node* node = require_scalar(key, "a number");
  if (!node) return fallback;
  if (!is_plain(*node)) {
    fail(key, "expected a number, got " + describe_node(*node) + " (write numbers without quotes)");
  }
  double value = 0;
  const Parsed parsed = parse_real(node->Scalar(), value);
  if (parsed == Parsed::malformed) fail(key, "expected a number, got \"" + node->Scalar() + "\"");
  if (parsed == Parsed::out_of_range || !allowed.contains(value)) {
    fail(key, "must be " + allowed.describe() + ", got " + node->Scalar());
  }
  return value;
}

std::string ConfigSection::text(std::string_view key, const std::string& fallback) const {
  const YAML::Node* node = require_scalar(key, "a string");
  if (!node) return fallback;
  if (!is_plain(*node) && !quote_closes_on_its_line(*text_, node->Mark())) {
    fail(key, "the quoted value does not end on its line (is a closing quote missing?)");
  }
  const std::string& value = node->Scalar();
  if (value.empty()) fail(key, "must not be empty");
  // Hosts, paths and names are one line; a block scalar (| or >) is a mistake.
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20) {
      fail(key, "must be one line without control characters");
    }
  }
  return value;
}

std::string ConfigSection::word(std::string_view key, const std::string& fallback,
                                const std::vector<std::string>& allowed) const {
  const std::string value = text(key, fallback);
  for (const std::string& candidate : allowed) {
    if (value == candidate) return value;
  }
  fail(key, "must be one of " + join(allowed) + ", got \"" + value + "\"");
}

std::optional<std::string> ConfigSection::scalar(std::string_view key, const char* expected) const {
  const YAML::Node* node = require_scalar(key, expected);
  if (!node) return std::nullopt;
  return node->Scalar();
}

}  // namespace tandem::config
