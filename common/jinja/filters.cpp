// Filters on text and numbers, and apply_filter, the dispatch.
#include "common/jinja/filters.h"

#include <array>

#include "common/jinja/builtins.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/jinja/failure.h"
#include "common/jinja/text.h"

namespace tandem::jinja {

namespace {

// Python's int(str, base): surrounding whitespace, a sign, underscores
// between digits, a 0x/0o/0b prefix matching the base.
bool parse_python_int(std::string text, int base, int64_t* out) {
  text = strip(text, true, true, true);
  std::string digits;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i + 1 < text.size() && text[i] == '0') {
    char p = static_cast<char>(text[i + 1] | 32);
    if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2)) i += 2;
  }
  for (; i < text.size(); ++i) {
    if (text[i] == '_' && !digits.empty() && i + 1 < text.size() && text[i + 1] != '_') continue;
    digits += text[i];
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || digits[0] == '+' || digits[0] == '-' || digits[0] == ' ') return false;
  *out = negative ? -v : v;
  return true;
}

bool parse_python_float(const std::string& raw, double* out) {
  std::string text = strip(raw, true, true, true);
  std::string cleaned;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '_' && i > 0 && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) continue;
    cleaned += text[i];
  }
  if (cleaned.empty()) return false;
  std::string lower = ascii_lower(cleaned);
  size_t sign = lower[0] == '+' || lower[0] == '-';
  std::string body = lower.substr(sign);
  if (body == "inf" || body == "infinity" || body == "nan") {
    double v = body == "nan" ? NAN : INFINITY;
    *out = lower[0] == '-' ? -v : v;
    return true;
  }
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return false;  // no hex floats
  char* end = nullptr;
  *out = std::strtod(cleaned.c_str(), &end);
  return *end == '\0';
}

Value to_int(const Value& v, const Value& fallback, int base) {
  int64_t i;
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) {
    if (std::isfinite(v.as_float()) && std::fabs(v.as_float()) < 9.2e18) return Value::integer(static_cast<int64_t>(v.as_float()));
    return fallback;
  }
  if (v.is_string()) {
    if (parse_python_int(v.as_string(), base, &i)) return Value::integer(i);
    double f;
    if (parse_python_float(v.as_string(), &f) && std::isfinite(f) && std::fabs(f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(f));
    }
  }
  return fallback;
}

// Python's round(x, n): glibc's printf rounds the exact binary value
// half-to-even, which is what CPython's correctly rounded round() gives.
double python_round(double x, int64_t digits) {
  if (!std::isfinite(x)) return x;
  if (digits > 300 || digits < -300) return digits > 0 ? x : 0.0 * x;
  if (digits < 0) {
    double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
  }
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(digits), x);
  return std::strtod(buffer, nullptr);
}

std::string indent(const std::string& s, const std::string& prefix, bool first, bool blank) {
  std::vector<std::string> lines = split(s + "\n", "\n", -1);
  lines.pop_back();  // splitlines() of text ending in "\n"
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    bool add = (i > 0 || first) && (blank || !lines[i].empty());
    if (add) out += prefix;
    out += lines[i];
  }
  if (first && lines.empty()) out += prefix;
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Jinja's title filter: words begin after -, whitespace, (, {, [ or <.
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || (c >= '\t' && c <= '\r');
    if (separator) { out += c; word_start = true; continue; }
    out += word_start ? ascii_upper(std::string(1, c)) : ascii_lower(std::string(1, c));
    word_start = false;
  }
  return out;
}

Value tojson(Interpreter& in, const Value& v, CallArgs& args) {
  Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat format;
  format.ensure_ascii = p.get_bool(0, false);
  if (p.has(1) && !p.get(1).is_none()) {
    if (p.get(1).is_string()) fail("tojson(): a string indent is not supported");
    format.indent = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(p.get_int(1, 0), 64)));
    format.item_separator = ",";
  }
  if (p.has(2) && !p.get(2).is_none()) {
    const Value& sep = p.get(2);
    if (!sep.is_list() || sep.as_list().size() != 2 || !sep.as_list()[0].is_string() || !sep.as_list()[1].is_string()) {
      fail("tojson(): separators must be a pair of strings");
    }
    format.item_separator = sep.as_list()[0].as_string();
    format.key_separator = sep.as_list()[1].as_string();
  }
  format.sort_keys = p.get_bool(3, false);
  std::string text = to_json(v, format);
  in.check_size(text.size());
  in.charge(text.size() / 64);
  return Value::string(std::move(text));
}

}  // namespace

bool scalar_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args, Value* out) {
  if (name == "tojson") {
    *out = tojson(in, value, args);
  } else if (name == "trim") {
    Params p(name, args, {"chars"});
    bool whitespace = !p.has(0) || p.get(0).is_none();
    *out = Value::string(strip(to_str(value), true, true, whitespace, whitespace ? "" : p.get_string(0, "")));
  } else if (name == "string") {
    Params p(name, args, {});
    *out = value.is_string() ? value : Value::string(to_str(value));
  } else if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    Params p(name, args, {});
    std::string s = to_str(value);
    *out = Value::string(name == "upper" ? ascii_upper(s) : name == "lower" ? ascii_lower(s)
                         : name == "capitalize" ? capitalize(s) : jinja_title(s));
  } else if (name == "replace") {
    Params p(name, args, {"old", "new", "count"});
    std::string result = replace(to_str(value), to_str(p.get(0)), to_str(p.get(1)),
                                 p.has(2) && !p.get(2).is_none() ? p.get_int(2, -1) : -1);
    in.check_size(result.size());
    *out = Value::string(std::move(result));
  } else if (name == "int") {
    Params p(name, args, {"default", "base"});
    *out = to_int(value, p.has(0) ? p.get(0) : Value::integer(0), static_cast<int>(p.get_int(1, 10)));
  } else if (name == "float") {
    Params p(name, args, {"default"});
    double f;
    if (value.is_number()) *out = Value::floating(value.as_float());
    else if (value.is_string() && parse_python_float(value.as_string(), &f)) *out = Value::floating(f);
    else *out = p.has(0) ? p.get(0) : Value::floating(0.0);
  } else if (name == "abs") {
    Params p(name, args, {});
    if (value.is_float()) *out = Value::floating(std::fabs(value.as_float()));
    else if (value.is_int() || value.is_bool()) *out = Value::integer(value.as_int() < 0 ? -value.as_int() : value.as_int());
    else fail("bad operand type for abs(): '" + type_name(value) + "'");
  } else if (name == "round") {
    Params p(name, args, {"precision", "method"});
    std::string method = p.get_string(1, "common");
    int64_t precision = p.get_int(0, 0);
    if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
    if (!value.is_number()) fail("round() needs a number, got " + type_name(value));
    if (method == "common" && !value.is_float()) {
      *out = Value::integer(value.as_int());
    } else if (method == "common") {
      *out = Value::floating(python_round(value.as_float(), precision));
    } else {
      double scale = std::pow(10.0, static_cast<double>(precision));
      double x = value.as_float() * scale;
      *out = Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
    }
  } else if (name == "indent") {
    Params p(name, args, {"width", "first", "blank"});
    std::string prefix = p.has(0) && p.get(0).is_string() ? p.get(0).as_string()
                                                          : std::string(static_cast<size_t>(std::clamp<int64_t>(p.get_int(0, 4), 0, 256)), ' ');
    if (value.is_undefined()) undefined_error(value);
    if (!value.is_string()) fail("unsupported operand type(s) for +=: '" + type_name(value) + "' and 'str'");
    std::string result = indent(value.as_string(), prefix, p.get_bool(1, false), p.get_bool(2, false));
    in.check_size(result.size());
    *out = Value::string(std::move(result));
  } else if (name == "e" || name == "escape" || name == "forceescape") {
    Params p(name, args, {});
    *out = Value::string(html_escape(to_str(value)));
  } else if (name == "safe") {
    Params p(name, args, {});
    *out = value;
  } else if (name == "center") {
    Params p(name, args, {"width"});
    std::string s = to_str(value);
    int64_t width = std::min<int64_t>(p.get_int(0, 80), 1 << 20), n = code_point_count(s);
    if (width <= n) { *out = Value::string(s); return true; }
    int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
    *out = Value::string(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
  } else if (name == "wordcount") {
    Params p(name, args, {});
    std::string s = to_str(value);
    int64_t words = 0;
    bool in_word = false;
    for (char c : s) {
      bool word_char = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (static_cast<unsigned char>(c) >= 0x80);
      if (word_char && !in_word) ++words;
      in_word = word_char;
    }
    *out = Value::integer(words);
  } else if (name == "truncate") {
    Params p(name, args, {"length", "killwords", "end", "leeway"});
    if (!value.is_string()) fail("truncate() needs a string, got " + type_name(value));
    std::string s = value.as_string(), end = p.get_string(2, "...");
    int64_t length_limit = p.get_int(0, 255), leeway = p.get_int(3, 5);
    auto offsets = code_point_offsets(s);
    int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    if (n <= length_limit + leeway) { *out = Value::string(s); return true; }
    int64_t keep = std::clamp<int64_t>(length_limit - code_point_count(end), 0, n);
    std::string head = s.substr(0, offsets[static_cast<size_t>(keep)]);
    if (!p.get_bool(1, false)) head = rsplit(head, " ", 1)[0];
    *out = Value::string(head + end);
  } else {
    return false;
  }
  return true;
}

bool is_filter_name(std::string_view name) {
  static constexpr std::array<std::string_view, 43> kNames = {"abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first", "float", "forceescape", "indent", "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "wordcount"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

Value apply_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args) {
  Value out;
  if (scalar_filter(in, name, value, args, &out) || sequence_filter(in, name, value, args, &out)) return out;
  fail("no filter named '" + name + "'");
}

}  // namespace tandem::jinja
