// The `is` tests: `x is defined`, `n is divisibleby 3`, `a is eq b`...
#include <algorithm>
#include <array>

#include "common/jinja/builtins.h"
#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"

namespace tandem::jinja {

namespace {

const Value& one_argument(const std::string& name, CallArgs& args) {
  if (args.positional.size() != 1 || !args.keyword.empty()) fail("test '" + name + "' takes one argument");
  return args.positional[0];
}

bool has_cased(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') { if (!want_lower) return false; cased = true; }
    if (c >= 'A' && c <= 'Z') { if (want_lower) return false; cased = true; }
  }
  return cased;
}

Value modulo(Interpreter& in, const Value& a, const Value& b) {
  if (!a.is_undefined() && !a.is_number()) fail("test needs a number, got " + type_name(a));
  return binary_op(in, "%", a, b);
}

}  // namespace

bool is_test_name(std::string_view name) {
  static constexpr std::array<std::string_view, 37> kNames = {"!=", "<", "<=", "==", ">", ">=", "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence", "string", "true", "undefined", "upper"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.kind() == K::dict;
  if (name == "iterable") return v.is_list() || v.kind() == K::dict || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.kind() == K::dict || v.is_string() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "eq" || name == "equalto" || name == "==") return compare_op("==", v, one_argument(name, args));
  if (name == "ne" || name == "!=") return compare_op("!=", v, one_argument(name, args));
  if (name == "lt" || name == "lessthan" || name == "<") return compare_op("<", v, one_argument(name, args));
  if (name == "le" || name == "<=") return compare_op("<=", v, one_argument(name, args));
  if (name == "gt" || name == "greaterthan" || name == ">") return compare_op(">", v, one_argument(name, args));
  if (name == "ge" || name == ">=") return compare_op(">=", v, one_argument(name, args));
  if (name == "in") return contains(one_argument(name, args), v);
  if (name == "sameas") {
    const Value& other = one_argument(name, args);
    if (v.is_namespace() && other.is_namespace()) return &v.as_dict() == &other.as_dict();
    // `is` on Python's singletons and small values.
    return v.kind() == other.kind() && (v.is_none() || v.is_undefined() || (v.is_bool() && v.as_bool() == other.as_bool()));
  }
  // Python's `value % 2 == 1`, for floats too.
  if (name == "odd") return equal(modulo(in, v, Value::integer(2)), Value::integer(1));
  if (name == "even") return equal(modulo(in, v, Value::integer(2)), Value::integer(0));
  if (name == "divisibleby") return equal(modulo(in, v, one_argument(name, args)), Value::integer(0));
  if (name == "lower" || name == "upper") {
    if (v.is_undefined()) return false;
    return has_cased(to_str(v), name == "lower");
  }
  if (name == "escaped") return false;
  fail("no test named '" + name + "'");
}

}  // namespace tandem::jinja
