// The names every template sees: range, namespace, dict,
// raise_exception, strftime_now (transformers adds the last two); and
// Params, the argument matching the builtins share.
#include <ctime>

#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"

namespace tandem::jinja {

Params::Params(const std::string& function, CallArgs& args, std::vector<std::string> names)
    : function_(function), names_(std::move(names)), values_(names_.size()), given_(names_.size(), false) {
  if (args.positional.size() > names_.size()) {
    fail(function_ + "() takes at most " + std::to_string(names_.size()) + " argument(s), " +
         std::to_string(args.positional.size()) + " given");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) {
    values_[i] = args.positional[i];
    given_[i] = true;
  }
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) fail(function_ + "() got an unexpected keyword argument '" + key + "'");
    if (given_[i]) fail(function_ + "() got multiple values for argument '" + key + "'");
    values_[i] = value;
    given_[i] = true;
  }
}

int64_t Params::get_int(size_t i, int64_t fallback) const {
  if (!given_[i]) return fallback;
  if (!values_[i].is_int() && !values_[i].is_bool()) {
    fail(function_ + "(): '" + names_[i] + "' must be an integer, not " + type_name(values_[i]));
  }
  return values_[i].as_int();
}

bool Params::get_bool(size_t i, bool fallback) const { return given_[i] ? truthy(values_[i]) : fallback; }

std::string Params::get_string(size_t i, const std::string& fallback) const {
  if (!given_[i]) return fallback;
  if (!values_[i].is_string()) {
    fail(function_ + "(): '" + names_[i] + "' must be a string, not " + type_name(values_[i]));
  }
  return values_[i].as_string();
}

namespace {

// Jinja2's sandbox refuses ranges over 100000 items; so do we.
constexpr int64_t kMaxRange = 100000;

Value range(Interpreter& in, CallArgs& args) {
  if (!args.keyword.empty()) fail("range() takes no keyword arguments");
  auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  for (auto& v : p) {
    if (!v.is_int() && !v.is_bool()) fail("'" + type_name(v) + "' object cannot be interpreted as an integer");
  }
  int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  // Count in long double: stop - start can overflow int64.
  long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  long double count = span / static_cast<long double>(step);
  if (count > kMaxRange) fail("range too big: the sandbox allows at most 100000 items");
  in.charge(static_cast<size_t>(count > 0 ? count : 0) / 8);
  List items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::integer(i));
  return Value::list(std::move(items));
}

Value make_namespace(Interpreter& in, CallArgs& args) {
  Dict d;
  for (auto& v : args.positional) {
    if (!v.is_dict()) fail("namespace() takes a dict or keyword arguments");
    for (auto& [k, item] : v.as_dict().entries) d.set(k, item);
  }
  for (auto& [k, v] : args.keyword) d.set(k, v);
  Value ns = Value::namespace_object(std::move(d));
  in.track_namespace(ns);
  return ns;
}

Value make_dict(Interpreter&, CallArgs& args) {
  Dict d;
  for (auto& v : args.positional) {
    if (!v.is_dict()) fail("dict() takes a dict or keyword arguments");
    for (auto& [k, item] : v.as_dict().entries) d.set(k, item);
  }
  for (auto& [k, v] : args.keyword) d.set(k, v);
  return Value::dict(std::move(d));
}

Value raise_exception(Interpreter&, CallArgs& args) {
  Params p("raise_exception", args, {"message"});
  throw Failure{to_str(p.get(0)), true};
}

Value strftime_now(Interpreter& in, CallArgs& args) {
  Params p("strftime_now", args, {"format"});
  std::string format = p.get_string(0, "");
  double seconds = in.now_seconds();
  std::time_t t = seconds == 0 ? std::time(nullptr) : static_cast<std::time_t>(seconds);
  std::tm parts{};
  gmtime_r(&t, &parts);
  if (format.empty()) return Value::string("");
  std::string buffer(256 + format.size() * 8, '\0');
  size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &parts);
  buffer.resize(n);
  return Value::string(buffer);
}

}  // namespace

Value global(const std::string& name) {
  static const Value kRange = Value::callable("range", range);
  static const Value kNamespace = Value::callable("namespace", make_namespace);
  static const Value kDict = Value::callable("dict", make_dict);
  static const Value kRaise = Value::callable("raise_exception", raise_exception);
  static const Value kStrftime = Value::callable("strftime_now", strftime_now);
  if (name == "range") return kRange;
  if (name == "namespace") return kNamespace;
  if (name == "dict") return kDict;
  if (name == "raise_exception") return kRaise;
  if (name == "strftime_now") return kStrftime;
  return Value();
}

}  // namespace tandem::jinja
