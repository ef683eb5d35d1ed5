// JSON to Value (the render context) and Value to JSON text (the tojson
// filter as transformers defines it: Python's json.dumps with
// ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/text.h"
#include "common/tokenizer/utf8.h"

namespace tandem::jinja {

namespace {

constexpr int kMaxDepth = 256;

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxDepth) fail("the context is nested more than 256 deep");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (auto& item : j) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: fail("the context holds a value JSON templates cannot use (binary)");
  }
}

void quote(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    auto u = static_cast<unsigned char>(c);
    char buffer[16];
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == '\b') out += "\\b";
    else if (c == '\f') out += "\\f";
    else if (u < 0x20 || (ensure_ascii && u == 0x7F)) {
      std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
      out += buffer;
    } else if (u >= 0x80 && ensure_ascii) {
      const utf8::Step step = utf8::step(s, i);
      uint32_t cp = step.valid ? step.code_point : 0xFFFD;  // bad bytes pass as U+FFFD
      i += step.length;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buffer, sizeof buffer, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buffer, sizeof buffer, "\\u%04x", cp);
      }
      out += buffer;
      continue;
    } else {
      out += c;
    }
    ++i;
  }
  out += '"';
}

void dump(std::string& out, const Value& v, const JsonFormat& f, int depth) {
  if (depth > kMaxDepth) fail("tojson: value nested more than 256 deep");
  if (out.size() > f.max_bytes) fail("tojson: text exceeds the output limit (Limits::max_output_bytes)");
  auto newline = [&](int level) {
    if (!f.pretty) return;
    if (out.size() + 1 + f.indent_unit.size() * static_cast<size_t>(level) > f.max_bytes) {
      fail("tojson: text exceeds the output limit (Limits::max_output_bytes)");
    }
    out += '\n';
    for (int i = 0; i < level; ++i) out += f.indent_unit;
  };
  switch (v.kind()) {
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.as_int()); return;
    case Value::Kind::floating: {
      double d = v.as_float();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(d);
      return;
    }
    case Value::Kind::string: quote(out, v.as_string(), f.ensure_ascii); return;
    case Value::Kind::list: {
      if (v.is_generator()) fail("Object of type generator is not JSON serializable");
      if (v.as_list().empty()) { out += "[]"; return; }
      out += '[';
      bool first = true;
      for (auto& item : v.as_list()) {
        if (!first) out += f.item_separator;
        first = false;
        newline(depth + 1);
        dump(out, item, f, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      if (v.as_dict().entries.empty()) { out += "{}"; return; }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (auto& e : v.as_dict().entries) entries.push_back(&e);
      if (f.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      bool first = true;
      for (auto* e : entries) {
        if (!first) out += f.item_separator;
        first = false;
        newline(depth + 1);
        quote(out, e->first, f.ensure_ascii);
        out += f.key_separator;
        dump(out, e->second, f, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: fail("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

std::string to_json(const Value& v, const JsonFormat& format) {
  std::string out;
  dump(out, v, format, 0);
  return out;
}

}  // namespace tandem::jinja
