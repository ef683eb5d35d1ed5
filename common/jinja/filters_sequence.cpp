// Filters on lists and dicts: length, join, first/last, map, select,
// sort, unique, sum, min/max, items, dictsort, batch...
#include <algorithm>

#include "common/jinja/failure.h"
#include "common/jinja/filters.h"
#include "common/jinja/text.h"

namespace tandem::jinja {

namespace {

// `attribute="a.b.0"`: Jinja looks each part up as an item, digits as indexes.
Value attribute_path(const Value& item, const Value& path) {
  if (path.is_int()) return get_item(item, path);
  Value v = item;
  for (auto& part : split(to_str(path), ".", -1)) {
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = get_item(v, digits ? Value::integer(std::stoll(part.substr(0, 18))) : Value::string(part));
  }
  return v;
}

// Sorting and min/max compare strings case-insensitively unless asked.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  Value v = attribute.is_undefined() || attribute.is_none() ? item : attribute_path(item, attribute);
  if (!case_sensitive && v.is_string()) return Value::string(ascii_lower(v.as_string()));
  return v;
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  int c = compare(a, b);
  if (c == -2) fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  return c < 0;
}

CallArgs tail_args(const CallArgs& args, size_t from) {
  CallArgs rest;
  rest.line = args.line;
  for (size_t i = from; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keyword = args.keyword;
  return rest;
}

// select/reject/selectattr/rejectattr.
Value select(Interpreter& in, const std::string& name, const Value& value, CallArgs& args) {
  bool by_attribute = name == "selectattr" || name == "rejectattr";
  bool keep_when = name == "select" || name == "selectattr";
  size_t first_test_arg = by_attribute ? 1 : 0;
  if (by_attribute && args.positional.empty()) fail(name + "() needs an attribute name");
  std::string test = args.positional.size() > first_test_arg ? to_str(args.positional[first_test_arg]) : "";
  List kept;
  for (auto& item : iterate(value)) {
    in.charge(1);
    Value subject = by_attribute ? attribute_path(item, args.positional[0]) : item;
    bool passed;
    if (test.empty()) {
      passed = truthy(subject);
    } else {
      CallArgs test_args = tail_args(args, first_test_arg + 1);
      passed = apply_test(in, test, subject, test_args);
    }
    if (passed == keep_when) kept.push_back(item);
  }
  return Value::list(std::move(kept));
}

Value map(Interpreter& in, const Value& value, CallArgs& args) {
  List mapped;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (auto& [k, v] : args.keyword) {
    if (k == "attribute") attribute = &v;
    else if (k == "default") fallback = &v;
  }
  for (auto& item : iterate(value)) {
    in.charge(1);
    if (attribute) {
      Value v = attribute_path(item, *attribute);
      mapped.push_back(v.is_undefined() && fallback ? *fallback : v);
    } else {
      if (args.positional.empty()) fail("map() needs a filter name or attribute=");
      CallArgs filter_args = tail_args(args, 1);
      mapped.push_back(apply_filter(in, to_str(args.positional[0]), item, filter_args));
    }
  }
  return Value::list(std::move(mapped));
}

Value sorted(Interpreter& in, const Value& value, CallArgs& args) {
  Params p("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool reverse = p.get_bool(0, false), case_sensitive = p.get_bool(1, false);
  List items = iterate(value);
  in.charge(items.size());
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items) keyed.emplace_back(sort_key(item, p.get(2), case_sensitive), item);
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  List out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value min_max(Interpreter& in, bool want_max, const Value& value, CallArgs& args) {
  Params p(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  List items = iterate(value);
  in.charge(items.size());
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(items[0], p.get(1), p.get_bool(0, false));
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(items[i], p.get(1), p.get_bool(0, false));
    if (want_max ? less(best_key, key) : less(key, best_key)) { best = i; best_key = key; }
  }
  return items[best];
}

Value unique(Interpreter& in, const Value& value, CallArgs& args) {
  Params p("unique", args, {"case_sensitive", "attribute"});
  List out, seen;
  for (auto& item : iterate(value)) {
    in.charge(1 + seen.size() / 8);
    Value key = sort_key(item, p.get(1), p.get_bool(0, false));
    bool duplicate = false;
    for (auto& s : seen) if (equal(s, key)) { duplicate = true; break; }
    if (duplicate) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value items_of(const Value& value) {
  if (value.is_undefined()) return Value::list({});
  if (!value.is_dict() || value.is_namespace()) fail("can only get item pairs from a mapping");
  List pairs;
  for (auto& [k, v] : value.as_dict().entries) pairs.push_back(Value::list({Value::string(k), v}, true));
  return Value::list(std::move(pairs));
}

}  // namespace

bool sequence_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args, Value* out) {
  if (name == "length" || name == "count") {
    Params p(name, args, {});
    *out = Value::integer(length(value));
  } else if (name == "list") {
    Params p(name, args, {});
    *out = Value::list(iterate(value));
  } else if (name == "items") {
    Params p(name, args, {});
    *out = items_of(value);
  } else if (name == "first" || name == "last") {
    Params p(name, args, {});
    List items = iterate(value);
    if (items.empty()) *out = Value::undefined("No " + name + " item, sequence was empty.");
    else *out = name == "first" ? items.front() : items.back();
  } else if (name == "join") {
    Params p(name, args, {"d", "attribute"});
    std::string separator = p.has(0) ? to_str(p.get(0)) : "", joined;
    bool first = true;
    if (!value.is_list() && !value.is_dict() && !value.is_string() && !value.is_undefined()) {
      fail("'" + type_name(value) + "' object is not iterable");
    }
    for (auto& item : iterate(value)) {
      if (!first) joined += separator;
      first = false;
      joined += to_str(p.has(1) ? attribute_path(item, p.get(1)) : item);
      in.check_size(joined.size());
    }
    in.charge(joined.size() / 64);
    *out = Value::string(std::move(joined));
  } else if (name == "default" || name == "d") {
    Params p(name, args, {"default_value", "boolean"});
    bool use_default = p.get_bool(1, false) ? !truthy(value) : value.is_undefined();
    *out = use_default ? (p.has(0) ? p.get(0) : Value::string("")) : value;
  } else if (name == "map") {
    *out = map(in, value, args);
  } else if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    *out = select(in, name, value, args);
  } else if (name == "sort") {
    *out = sorted(in, value, args);
  } else if (name == "dictsort") {
    Params p(name, args, {"case_sensitive", "by", "reverse"});
    std::string by = p.get_string(1, "key");
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    CallArgs sort_args;
    sort_args.keyword = {{"reverse", Value::boolean(p.get_bool(2, false))},
                         {"case_sensitive", Value::boolean(p.get_bool(0, false))},
                         {"attribute", Value::integer(by == "key" ? 0 : 1)}};
    *out = sorted(in, items_of(value), sort_args);
  } else if (name == "unique") {
    *out = unique(in, value, args);
  } else if (name == "reverse") {
    Params p(name, args, {});
    if (value.is_string()) {
      List chars = iterate(value);
      std::string reversed;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) reversed += it->as_string();
      *out = Value::string(std::move(reversed));
    } else {
      List items = iterate(value);
      std::reverse(items.begin(), items.end());
      *out = Value::list(std::move(items));
    }
  } else if (name == "sum") {
    Params p(name, args, {"attribute", "start"});
    Value total = p.has(1) ? p.get(1) : Value::integer(0);
    for (auto& item : iterate(value)) {
      in.charge(1);
      total = binary_op(in, "+", total, p.has(0) ? attribute_path(item, p.get(0)) : item);
    }
    *out = total;
  } else if (name == "min" || name == "max") {
    *out = min_max(in, name == "max", value, args);
  } else if (name == "batch") {
    Params p(name, args, {"linecount", "fill_with"});
    int64_t size = p.get_int(0, 0);
    if (size <= 0) fail("batch() needs a positive line count");
    in.check_size(static_cast<size_t>(size));
    List batches, current;
    for (auto& item : iterate(value)) {
      current.push_back(item);
      if (static_cast<int64_t>(current.size()) == size) { batches.push_back(Value::list(std::move(current))); current.clear(); }
    }
    if (!current.empty()) {
      if (p.has(1)) while (static_cast<int64_t>(current.size()) < size) current.push_back(p.get(1));
      batches.push_back(Value::list(std::move(current)));
    }
    *out = Value::list(std::move(batches));
  } else if (name == "attr") {
    Params p(name, args, {"name"});
    *out = get_attribute(value, p.get_string(0, ""));
  } else {
    return false;
  }
  return true;
}

}  // namespace tandem::jinja
