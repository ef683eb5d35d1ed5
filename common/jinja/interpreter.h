// The interpreter: walks the syntax tree with a context and writes the
// output. Scopes follow Jinja2: each loop iteration and each macro call
// gets its own (a plain `set` inside them does not leak out, which is why
// templates use namespace()), `if` blocks share their enclosing scope, and
// a macro sees the scope it was defined in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/jinja/ast.h"

namespace tandem::jinja {

struct Limits;       // template.h
struct Environment;  // template.h

class Interpreter {
 public:
  Interpreter(const Limits& limits, const Environment& environment);
  // Empties the scopes macros captured and the namespaces made, which
  // may hold themselves (a macro lives in the scope it captures): without
  // this their shared pointers would keep them alive forever.
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const Body& body, const nlohmann::ordered_json& context);

  Value eval(const Expr& e);
  Value call(const Value& callee, CallArgs& args);
  // Counts work against Limits::max_steps; long strings and lists count
  // one step per 64 bytes or items, so building them is bounded too.
  void charge(size_t steps);
  // Charges the work of scanning `v` (comparing, searching, filtering it):
  // one step per 64 bytes of a string or 8 items of a list or dict, so a
  // loop over a large value cannot run far past Limits::max_steps.
  void charge_scan(const Value& v);
  void check_size(size_t bytes) const;
  size_t max_output_bytes() const { return max_output_bytes_; }
  double now_seconds() const { return now_seconds_; }  // Environment::now_seconds
  int line() const { return line_; }
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }

 private:
  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;
  };
  enum class Flow { normal, break_loop, continue_loop };

  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  void exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  void define_macro(const Stmt& s);
  void append(const std::string& text);
  std::string capture(const Body& body);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value value);
  void assign_targets(const std::vector<std::string>& targets, const Value& value);
  Value call_macro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args, const Value* caller);
  Value eval_call(const Expr& e);
  CallArgs eval_args(const std::vector<Argument>& args, int line);
  Value eval_filter(const Expr& e);

  // Limits and Environment, copied (template.h, which defines them, pulls
  // in all of nlohmann/json; the engine's other files need not).
  size_t max_output_bytes_;
  size_t max_steps_;
  int max_call_depth_;
  double now_seconds_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  size_t steps_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
  const Value* block_body_ = nullptr;
  std::vector<std::shared_ptr<Scope>> captured_scopes_;
  std::vector<Value> namespaces_;  // the rendered body a {% filter %} applies to
};

// operators.cpp: Python's operators on Values.
Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b);
bool compare_op(const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value slice(Interpreter& in, const Value& object, const Value& start, const Value& stop, const Value& step);
// The items a for loop, `list` or `in` iterates: list items, dict keys,
// string characters; Undefined iterates as empty.
List iterate(const Value& v);
[[noreturn]] void undefined_error(const Value& undefined);

// filters.cpp, tests.cpp, methods.cpp, globals.cpp.
Value apply_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& value, CallArgs& args);
// A method of a str, dict or list (`s.startswith('x')`); false when `name`
// is none of that type's methods.
bool call_method(Interpreter& in, const Value& object, const std::string& name, CallArgs& args, Value* result);
Value global(const std::string& name);

// json_value.cpp: the context in, and transformers' tojson out.
Value from_json(const nlohmann::ordered_json& j);
struct JsonFormat {
  bool pretty = false;      // json.dumps with an indent: one item a line
  std::string indent_unit;  // what each level of nesting adds
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
  size_t max_bytes = SIZE_MAX;  // longer text fails (an indent can multiply the size)
};
std::string to_json(const Value& v, const JsonFormat& format);

// The arguments of a builtin, matched by position or keyword to `names`.
class Params {
 public:
  Params(const std::string& function, CallArgs& args, std::vector<std::string> names);
  bool has(size_t i) const { return !values_[i].is_undefined() || given_[i]; }
  const Value& get(size_t i) const { return values_[i]; }
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;
  std::string get_string(size_t i, const std::string& fallback) const;

 private:
  std::string function_;
  std::vector<std::string> names_;
  std::vector<Value> values_;
  std::vector<bool> given_;
};

}  // namespace tandem::jinja
