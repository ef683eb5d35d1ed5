// Value: what a Jinja expression evaluates to. JSON values (none, booleans,
// integers, floats, strings, lists, dicts) plus what Jinja adds: Undefined,
// tuples (printed with parentheses), namespaces (the one mutable object) and
// callables (macros, globals, loop.cycle).
//
// Lists and dicts are shared and never changed after they are built (the
// sandbox transformers uses is immutable), so copying a Value is cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::jinja {

class Value;
class Interpreter;
using List = std::vector<Value>;

// An ordered dict with string keys: the order of insertion, as Python's.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  int line = 0;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, namespace_, callable };

  Value() = default;  // Undefined with no name
  static Value undefined(std::string hint) { Value v; v.text_ = std::move(hint); return v; }
  static Value none() { return Value(Kind::none); }
  static Value boolean(bool b) { Value v(Kind::boolean); v.int_ = b; return v; }
  static Value integer(int64_t i) { Value v(Kind::integer); v.int_ = i; return v; }
  static Value floating(double f) { Value v(Kind::floating); v.float_ = f; return v; }
  static Value string(std::string s) { Value v(Kind::string); v.text_ = std::move(s); return v; }
  static Value list(List items, bool tuple = false);
  static Value dict(Dict d);
  static Value namespace_object(Dict d);
  static Value callable(std::string name, NativeFunction f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_int() const { return kind_ == Kind::integer; }
  bool is_float() const { return kind_ == Kind::floating; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_tuple() const { return kind_ == Kind::list && tuple_; }
  bool is_dict() const { return kind_ == Kind::dict || kind_ == Kind::namespace_; }
  bool is_namespace() const { return kind_ == Kind::namespace_; }
  bool is_callable() const { return kind_ == Kind::callable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return kind_ == Kind::floating ? static_cast<int64_t>(float_) : int_; }
  double as_float() const { return kind_ == Kind::floating ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return text_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& namespace_dict() const { return *dict_; }
  // The undefined name's hint ("'x' is undefined"), the callable's name.
  const std::string& hint() const { return text_; }
  Value call(Interpreter& interpreter, CallArgs& args) const { return (*function_)(interpreter, args); }

 private:
  explicit Value(Kind kind) : kind_(kind) {}
  Kind kind_ = Kind::undefined;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string text_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<NativeFunction> function_;
};

// Python's truth value: empty strings, lists and dicts, 0, None and
// Undefined are false.
bool truthy(const Value& v);
// Python's ==: 1 == 1.0 == True; lists and dicts by content.
bool equal(const Value& a, const Value& b);
// Python's <, for numbers, strings and lists; -2 (the caller throws) when
// the two cannot be ordered.
int compare(const Value& a, const Value& b);
// Python's str(): what {{ v }} prints (Undefined prints nothing).
std::string to_str(const Value& v);
// Python's repr(): strings quoted as Python quotes them.
std::string to_repr(const Value& v);
// Python's repr of a float: shortest round-trip digits, `1.0`, `1e-05`.
std::string float_repr(double f);
// The Python type name used in error messages ('dict object', 'str').
std::string type_name(const Value& v);
// len(): code points of a string, items of a list or dict.
int64_t length(const Value& v);

}  // namespace tandem::jinja
