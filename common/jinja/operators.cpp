// Python's operators on Values: arithmetic, comparison, `in`, attribute
// and item access, slicing, iteration.
#include <cmath>

#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/text.h"

namespace tandem::jinja {

void undefined_error(const Value& undefined) {
  fail(undefined.hint().empty() ? "value is undefined" : undefined.hint());
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value checked_int(bool overflow, int64_t value) {
  if (overflow) fail("integer overflow (Python integers are unbounded, this engine's are 64-bit)");
  return Value::integer(value);
}

Value repeat(Interpreter& in, const Value& sequence, int64_t times) {
  if (times < 0 || length(sequence) == 0) times = 0;
  if (sequence.is_string()) {
    const std::string& s = sequence.as_string();
    in.check_size(s.size() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX)));
    in.charge(s.size() * static_cast<size_t>(times) / 64);
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out));
  }
  const List& items = sequence.as_list();
  size_t total = items.size() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX));
  in.check_size(total);
  in.charge(total / 8);
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), sequence.is_tuple());
}

double python_float_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Value arithmetic(Interpreter& in, const std::string& op, const Value& a, const Value& b) {
  bool floats = a.is_float() || b.is_float();
  if (op == "+") {
    if (floats) return Value::floating(a.as_float() + b.as_float());
    int64_t r = 0;
    bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
    return checked_int(overflow, r);
  }
  if (op == "-") {
    if (floats) return Value::floating(a.as_float() - b.as_float());
    int64_t r = 0;
    bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
    return checked_int(overflow, r);
  }
  if (op == "*") {
    if (floats) return Value::floating(a.as_float() * b.as_float());
    int64_t r = 0;
    bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
    return checked_int(overflow, r);
  }
  if (op == "/") {
    if (b.as_float() == 0) fail("division by zero");
    return Value::floating(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (floats) {
      if (b.as_float() == 0) fail(op == "%" ? "float modulo" : "float floor division by zero");
      if (op == "%") return Value::floating(python_float_mod(a.as_float(), b.as_float()));
      return Value::floating(std::floor((a.as_float() - python_float_mod(a.as_float(), b.as_float())) / b.as_float() + 0.5));
    }
    int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) fail(op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) fail("integer overflow");
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) { --q; r += y; }
    return Value::integer(op == "%" ? r : q);
  }
  // **
  if (!floats && b.as_int() >= 0) {
    int64_t result = 1, base = a.as_int();
    for (int64_t e = b.as_int(); e > 0; --e) {
      if (__builtin_mul_overflow(result, base, &result)) fail("integer overflow");
      if (result == 0 || result == 1) break;
      in.charge(1);
    }
    return Value::integer(result);
  }
  if (a.as_float() == 0 && b.as_float() < 0) fail("0.0 cannot be raised to a negative power");
  return Value::floating(std::pow(a.as_float(), b.as_float()));
}

}  // namespace

Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a) + to_str(b);
    in.check_size(s.size());
    in.charge(s.size() / 64);
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (a.is_number() && b.is_number()) return arithmetic(in, op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(a.as_string().size() + b.as_string().size());
      in.charge((a.as_string().size() + b.as_string().size()) / 64);
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      in.check_size(items.size());
      in.charge(items.size() / 8);
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string() || a.is_list()) {
      fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(in, a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(in, b, a.as_int());
  }
  if (op == "%" && a.is_string()) fail("printf-style string formatting ('%' on a string) is not supported");
  unsupported(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(item));
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (auto& v : container.as_list()) if (equal(v, item)) return true;
    return false;
  }
  if (container.is_dict() && !container.is_namespace()) {
    return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
  }
  if (container.is_undefined()) return false;
  fail("argument of type '" + type_name(container) + "' is not iterable");
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  int c = compare(a, b);
  if (c == -2) {
    fail("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) undefined_error(object);
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(name)) return *v;
    return Value::undefined("'" + std::string(object.is_namespace() ? "Namespace" : "dict object") +
                            "' has no attribute '" + name + "'");
  }
  if (object.is_none()) return Value::undefined("'None' has no attribute '" + name + "'");
  return Value::undefined("'" + type_name(object) + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) undefined_error(object);
  if (object.is_list() || object.is_string()) {
    if (key.is_int() || key.is_bool()) {
      int64_t n = length(object), i = key.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        if (object.is_string()) return Value::undefined("'str object' has no attribute '" + std::to_string(key.as_int()) + "'");
        return Value::undefined(type_name(object) + " object has no element " + std::to_string(key.as_int()));
      }
      if (object.is_list()) return object.as_list()[static_cast<size_t>(i)];
      auto offsets = code_point_offsets(object.as_string());
      auto at = static_cast<size_t>(i);
      return Value::string(object.as_string().substr(offsets[at], offsets[at + 1] - offsets[at]));
    }
    if (key.is_string()) return get_attribute(object, key.as_string());
    return Value::undefined("'" + type_name(object) + " object' has no attribute '" + to_str(key) + "'");
  }
  if (object.is_dict()) {
    if (key.is_string()) return get_attribute(object, key.as_string());
    return Value::undefined("'dict object' has no attribute '" + to_str(key) + "'");
  }
  if (key.is_string()) return get_attribute(object, key.as_string());
  return Value::undefined("'" + type_name(object) + " object' has no attribute '" + to_str(key) + "'");
}

Value slice(Interpreter& in, const Value& object, const Value& start, const Value& stop, const Value& step_value) {
  if (object.is_undefined()) undefined_error(object);
  if (!object.is_list() && !object.is_string()) fail("'" + type_name(object) + "' object is not subscriptable");
  for (const Value* v : {&start, &stop, &step_value}) {
    if (!v->is_none() && !v->is_int() && !v->is_bool()) {
      fail("slice indices must be integers or None, not " + type_name(*v));
    }
  }
  int64_t n = length(object);
  int64_t step = step_value.is_none() ? 1 : step_value.as_int();
  if (step == 0) fail("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t begin = adjust(start, step < 0 ? n - 1 : 0);
  int64_t end = adjust(stop, step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) picks.push_back(i);
  in.charge(picks.size() / 8);
  if (object.is_list()) {
    List out;
    out.reserve(picks.size());
    for (int64_t i : picks) out.push_back(object.as_list()[static_cast<size_t>(i)]);
    return Value::list(std::move(out), object.is_tuple());
  }
  auto offsets = code_point_offsets(object.as_string());
  std::string out;
  for (int64_t i : picks) {
    auto at = static_cast<size_t>(i);
    out += object.as_string().substr(offsets[at], offsets[at + 1] - offsets[at]);
  }
  return Value::string(std::move(out));
}

List iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_dict() && !v.is_namespace()) {
    List keys;
    for (auto& [k, item] : v.as_dict().entries) keys.push_back(Value::string(k));
    return keys;
  }
  if (v.is_string()) {
    auto offsets = code_point_offsets(v.as_string());
    List chars;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      chars.push_back(Value::string(v.as_string().substr(offsets[i], offsets[i + 1] - offsets[i])));
    }
    return chars;
  }
  if (v.is_undefined()) return {};
  fail("'" + type_name(v) + "' object is not iterable");
}

}  // namespace tandem::jinja
