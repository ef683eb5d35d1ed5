#include "common/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/jinja/failure.h"
#include "common/jinja/text.h"

namespace tandem::jinja {

namespace {
// Printing or comparing a namespace that holds itself would never end.
constexpr int kMaxNesting = 256;
void check_nesting(int depth) {
  if (depth > kMaxNesting) fail("value nested more than 256 deep");
}
}  // namespace

const Value* Dict::find(std::string_view key) const {
  for (auto& [k, v] : entries) if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) { v = std::move(value); return; }
  }
  entries.emplace_back(key, std::move(value));
}

Value Value::list(List items, bool tuple) {
  Value v(Kind::list);
  v.list_ = std::make_shared<List>(std::move(items));
  v.tuple_ = tuple;
  return v;
}

Value Value::dict(Dict d) {
  Value v(Kind::dict);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::namespace_object(Dict d) {
  Value v(Kind::namespace_);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::callable(std::string name, NativeFunction f) {
  Value v(Kind::callable);
  v.text_ = std::move(name);
  v.function_ = std::make_shared<NativeFunction>(std::move(f));
  return v;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean:
    case Value::Kind::integer: return v.as_int() != 0;
    case Value::Kind::floating: return v.as_float() != 0;
    case Value::Kind::string: return !v.as_string().empty();
    case Value::Kind::list: return !v.as_list().empty();
    case Value::Kind::dict: return !v.as_dict().entries.empty();
    case Value::Kind::namespace_:
    case Value::Kind::callable: return true;
  }
  return true;
}

static bool equal_at(const Value& a, const Value& b, int depth) {
  check_nesting(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.as_string() == b.as_string();
    case Value::Kind::list: {
      if (a.is_tuple() != b.is_tuple() || a.as_list().size() != b.as_list().size()) return false;
      for (size_t i = 0; i < a.as_list().size(); ++i) {
        if (!equal_at(a.as_list()[i], b.as_list()[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::dict: {
      auto& x = a.as_dict().entries;
      if (x.size() != b.as_dict().entries.size()) return false;
      for (auto& [k, v] : x) {
        const Value* other = b.as_dict().find(k);
        if (!other || !equal_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::namespace_: return &a.as_dict() == &b.as_dict();  // identity
    default: return false;  // callables
  }
}

bool equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

static int compare_at(const Value& a, const Value& b, int depth) {
  check_nesting(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());  // UTF-8 bytes order as code points
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    auto& x = a.as_list();
    auto& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return -2;
}

int compare(const Value& a, const Value& b) { return compare_at(a, b, 0); }

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits and exponent, then Python's layout: fixed
  // notation for exponents -4..15, else d.ddde+XX.
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, f, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : sci.substr(0, e)) if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out += digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent + 1)) + "." + digits.substr(static_cast<size_t>(exponent + 1));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_text;
}

// The code point of the UTF-8 sequence at s[i] and its width (0 when the
// bytes are not valid UTF-8: they are then copied as they are).
static uint32_t decode_code_point(const std::string& s, size_t i, size_t* width) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return *width = 0;
  uint32_t cp = c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return *width = 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  *width = n;
  return cp;
}

// Python's repr() escapes what str.isprintable() rejects; these are the
// non-ASCII ones text meets: C1 controls, the no-break and typographic
// spaces, format characters (zero-width space, joiners, marks, BOM), line
// and paragraph separators, private use.
static bool is_printable_non_ascii(uint32_t cp) {
  if (cp <= 0xA0 || cp == 0xAD || cp == 0x1680 || cp == 0x3000 || cp == 0xFEFF) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F)) return false;
  if ((cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB) || cp >= 0xF0000) return false;
  return true;
}

static std::string string_repr(const std::string& s) {
  // Python prefers single quotes, and switches to double quotes when the
  // text has a single quote and no double quote.
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      size_t width = 0;
      uint32_t cp = decode_code_point(s, i, &width);
      if (width > 0 && !is_printable_non_ascii(cp)) {
        char hex[16];
        std::snprintf(hex, sizeof hex, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
        out += hex;
        i += width - 1;
        continue;
      }
      out += ch;
      continue;
    }
    if (ch == quote || ch == '\\') { out += '\\'; out += ch; }
    else if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

static std::string repr_at(const Value& v, int depth);

static std::string str_at(const Value& v, int depth) {
  check_nesting(depth);
  switch (v.kind()) {
    case Value::Kind::undefined: return "";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return v.as_bool() ? "True" : "False";
    case Value::Kind::integer: return std::to_string(v.as_int());
    case Value::Kind::floating: return float_repr(v.as_float());
    case Value::Kind::string: return v.as_string();
    case Value::Kind::list: {
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.as_list().size(); ++i) {
        if (i) out += ", ";
        out += repr_at(v.as_list()[i], depth + 1);
      }
      if (v.is_tuple() && v.as_list().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Value::Kind::dict:
    case Value::Kind::namespace_: {
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (auto& [k, item] : v.as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += string_repr(k) + ": " + repr_at(item, depth + 1);
      }
      return out + (v.is_namespace() ? "}>" : "}");
    }
    case Value::Kind::callable: return "<function " + v.hint() + ">";
  }
  return "";
}

static std::string repr_at(const Value& v, int depth) {
  if (v.is_string()) return string_repr(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return str_at(v, depth);
}

std::string to_str(const Value& v) { return str_at(v, 0); }
std::string to_repr(const Value& v) { return repr_at(v, 0); }

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "NoneType";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::integer: return "int";
    case Value::Kind::floating: return "float";
    case Value::Kind::string: return "str";
    case Value::Kind::list: return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::dict: return "dict";
    case Value::Kind::namespace_: return "Namespace";
    case Value::Kind::callable: return "function";
  }
  return "object";
}

int64_t length(const Value& v) {
  if (v.is_string()) return code_point_count(v.as_string());
  if (v.is_list()) return static_cast<int64_t>(v.as_list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().entries.size());
  if (v.is_undefined()) return 0;
  fail("object of type '" + type_name(v) + "' has no len()");
}

}  // namespace tandem::jinja
