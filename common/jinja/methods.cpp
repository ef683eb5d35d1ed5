// The Python methods templates call on values: str (startswith, split,
// strip, ...), dict (items, keys, values, get) and list (index, count).
// Nothing here changes a value: the sandbox transformers uses refuses
// append, update and the like, and so does this engine.
#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/text.h"

namespace tandem::jinja {

namespace {

Value string_list(const std::vector<std::string>& parts) {
  List items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const std::string& s, const Value& affix, bool prefix, const std::string& method) {
  if (affix.is_list()) {
    for (auto& item : affix.as_list()) if (affix_matches(s, item, prefix, method)) return true;
    return false;
  }
  if (!affix.is_string()) fail(method + " first arg must be str or a tuple of str, not " + type_name(affix));
  const std::string& a = affix.as_string();
  if (a.size() > s.size()) return false;
  return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
}

bool all_chars(const std::string& s, bool (*predicate)(char)) {
  if (s.empty()) return false;
  for (char c : s) if (!predicate(c)) return false;
  return true;
}

bool string_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& args, Value* out) {
  if (name == "startswith" || name == "endswith") {
    Params p(name, args, {"prefix"});
    *out = Value::boolean(affix_matches(s, p.get(0), name == "startswith", name));
  } else if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Params p(name, args, {"chars"});
    bool whitespace = !p.has(0) || p.get(0).is_none();
    std::string chars = whitespace ? "" : p.get_string(0, "");
    *out = Value::string(strip(s, name != "rstrip", name != "lstrip", whitespace, chars));
  } else if (name == "split" || name == "rsplit") {
    Params p(name, args, {"sep", "maxsplit"});
    int64_t maxsplit = p.get_int(1, -1);
    if (!p.has(0) || p.get(0).is_none()) {
      *out = string_list(name == "split" ? split_whitespace(s, maxsplit) : rsplit_whitespace(s, maxsplit));
    } else {
      std::string sep = p.get_string(0, "");
      if (sep.empty()) fail("empty separator");
      *out = string_list(name == "split" ? split(s, sep, maxsplit) : rsplit(s, sep, maxsplit));
    }
    in.charge(out->as_list().size() / 8);
  } else if (name == "replace") {
    Params p(name, args, {"old", "new", "count"});
    std::string from = p.get_string(0, ""), to = p.get_string(1, "");
    in.check_size(replaced_size(s, from, to, p.get_int(2, -1)));
    std::string result = replace(s, from, to, p.get_int(2, -1));
    *out = Value::string(std::move(result));
  } else if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    Params p(name, args, {});
    *out = Value::string(name == "upper" ? upper(s) : name == "lower" ? lower(s)
                         : name == "title" ? title(s) : capitalize(s));
  } else if (name == "find" || name == "rfind" || name == "count" || name == "index") {
    Params p(name, args, {"sub"});
    std::string sub = p.get_string(0, "");
    if (name == "count") {
      int64_t n = 0;
      if (sub.empty()) {
        n = code_point_count(s) + 1;
      } else {
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      }
      *out = Value::integer(n);
    } else {
      size_t at = name == "rfind" ? s.rfind(sub) : s.find(sub);
      if (at == std::string::npos && name == "index") fail("substring not found");
      *out = Value::integer(at == std::string::npos ? -1 : code_point_count(std::string_view(s).substr(0, at)));
    }
  } else if (name == "join") {
    Params p(name, args, {"iterable"});
    std::string joined;
    bool first = true;
    for (auto& item : iterate(p.get(0))) {
      if (!item.is_string()) fail("sequence item: expected str instance, " + type_name(item) + " found");
      if (!first) joined += s;
      first = false;
      joined += item.as_string();
      in.check_size(joined.size());
    }
    *out = Value::string(std::move(joined));
  } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
             name == "islower" || name == "isupper") {
    Params p(name, args, {});
    bool result;
    if (name == "isdigit") result = all_chars(s, [](char c) { return c >= '0' && c <= '9'; });
    else if (name == "isalpha") result = all_chars(s, [](char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; });
    else if (name == "isalnum") {
      result = all_chars(s, [](char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); });
    } else if (name == "isspace") {
      result = all_chars(s, [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); });
    } else {
      bool lower = false, upper = false;
      for (char c : s) { lower |= c >= 'a' && c <= 'z'; upper |= c >= 'A' && c <= 'Z'; }
      result = name == "islower" ? lower && !upper : upper && !lower;
    }
    *out = Value::boolean(result);
  } else {
    return false;
  }
  return true;
}

bool dict_method(const Value& d, const std::string& name, CallArgs& args, Value* out) {
  if (name == "items" || name == "keys" || name == "values") {
    Params p(name, args, {});
    List items;
    for (auto& [k, v] : d.as_dict().entries) {
      if (name == "items") items.push_back(Value::list({Value::string(k), v}, true));
      else items.push_back(name == "keys" ? Value::string(k) : v);
    }
    *out = Value::list(std::move(items));
  } else if (name == "get") {
    Params p(name, args, {"key", "default"});
    const Value& key = p.get(0);
    const Value* found = key.is_string() ? d.as_dict().find(key.as_string()) : nullptr;
    *out = found ? *found : (p.has(1) ? p.get(1) : Value::none());
  } else if (name == "append" || name == "update" || name == "pop" || name == "clear" || name == "setdefault" ||
             name == "popitem") {
    fail("unsafe method '" + name + "': chat templates may not change a dict");
  } else {
    return false;
  }
  return true;
}

bool list_method(const Value& l, const std::string& name, CallArgs& args, Value* out) {
  if (name == "index" || name == "count") {
    Params p(name, args, {"value"});
    int64_t count = 0;
    for (size_t i = 0; i < l.as_list().size(); ++i) {
      if (!equal(l.as_list()[i], p.get(0))) continue;
      if (name == "index") { *out = Value::integer(static_cast<int64_t>(i)); return true; }
      ++count;
    }
    if (name == "index") fail(to_repr(p.get(0)) + " is not in list");
    *out = Value::integer(count);
  } else if (name == "append" || name == "extend" || name == "pop" || name == "insert" || name == "remove" ||
             name == "sort" || name == "reverse" || name == "clear") {
    fail("unsafe method '" + name + "': chat templates may not change a list");
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool call_method(Interpreter& in, const Value& object, const std::string& name, CallArgs& args, Value* result) {
  if (object.is_undefined()) undefined_error(object);
  if (object.is_string()) return string_method(in, object.as_string(), name, args, result);
  if (object.is_dict()) return dict_method(object, name, args, result);
  if (object.is_list()) return list_method(object, name, args, result);
  return false;
}

}  // namespace tandem::jinja
