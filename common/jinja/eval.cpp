// Interpreter::eval: one expression node to its Value.
#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"

namespace tandem::jinja {

Value Interpreter::eval(const Expr& e) {
  charge(1);
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::literal: return e.value;
    case ExprKind::name: return lookup(e.name);
    case ExprKind::list:
    case ExprKind::tuple: {
      List items;
      items.reserve(e.operands.size());
      for (auto& item : e.operands) items.push_back(eval(*item));
      return Value::list(std::move(items), e.kind == ExprKind::tuple);
    }
    case ExprKind::dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
        Value key = eval(*e.operands[i]);
        if (!key.is_string()) fail("dict keys must be strings in chat templates, got " + type_name(key));
        d.set(key.as_string(), eval(*e.operands[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::negate:
    case ExprKind::plus: {
      Value v = eval(*e.operands[0]);
      if (v.is_undefined()) undefined_error(v);
      if (!v.is_number()) {
        fail(std::string("bad operand type for unary ") + (e.kind == ExprKind::negate ? "-" : "+") + ": '" +
             type_name(v) + "'");
      }
      if (e.kind == ExprKind::plus) return v.is_bool() ? Value::integer(v.as_int()) : v;
      if (v.is_float()) return Value::floating(-v.as_float());
      if (v.as_int() == INT64_MIN) fail("integer overflow");
      return Value::integer(-v.as_int());
    }
    case ExprKind::logical_not: return Value::boolean(!truthy(eval(*e.operands[0])));
    case ExprKind::logical_and: {
      Value left = eval(*e.operands[0]);
      return truthy(left) ? eval(*e.operands[1]) : left;
    }
    case ExprKind::logical_or: {
      Value left = eval(*e.operands[0]);
      return truthy(left) ? left : eval(*e.operands[1]);
    }
    case ExprKind::binary: {
      Value a = eval(*e.operands[0]);
      Value b = eval(*e.operands[1]);
      line_ = e.line;
      return binary_op(*this, e.name, a, b);
    }
    case ExprKind::compare: {
      Value left = eval(*e.operands[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.operands[i + 1]);
        line_ = e.line;
        if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::conditional: {
      if (truthy(eval(*e.operands[1]))) return eval(*e.operands[0]);
      if (e.operands[2]) return eval(*e.operands[2]);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
    case ExprKind::attribute: {
      Value object = eval(*e.operands[0]);
      line_ = e.line;
      return get_attribute(object, e.name);
    }
    case ExprKind::subscript: {
      Value object = eval(*e.operands[0]);
      Value key = eval(*e.operands[1]);
      line_ = e.line;
      return get_item(object, key);
    }
    case ExprKind::slice: {
      Value object = eval(*e.operands[0]);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.operands[i + 1] ? eval(*e.operands[i + 1]) : Value::none();
      line_ = e.line;
      return slice(*this, object, parts[0], parts[1], parts[2]);
    }
    case ExprKind::call: return eval_call(e);
    case ExprKind::filter: return eval_filter(e);
    case ExprKind::test: {
      Value v = eval(*e.operands[0]);
      CallArgs args = eval_args(e.args, e.line);
      line_ = e.line;
      return Value::boolean(apply_test(*this, e.name, v, args) != e.negated);
    }
    case ExprKind::block_body: return block_body_ ? *block_body_ : Value::string("");
  }
  return Value();
}

CallArgs Interpreter::eval_args(const std::vector<Argument>& args, int line) {
  CallArgs out;
  out.line = line;
  for (auto& a : args) {
    if (a.name.empty()) {
      out.positional.push_back(eval(*a.value));
    } else {
      for (auto& [k, v] : out.keyword) {
        if (k == a.name) fail("got multiple values for keyword argument '" + a.name + "'");
      }
      out.keyword.emplace_back(a.name, eval(*a.value));
    }
  }
  return out;
}

Value Interpreter::eval_call(const Expr& e) {
  const Expr& callee_expr = *e.operands[0];
  if (callee_expr.kind == ExprKind::attribute) {
    // s.startswith('x'), d.items(), l.index(x): the methods of the type.
    Value object = eval(*callee_expr.operands[0]);
    CallArgs args = eval_args(e.args, e.line);
    line_ = e.line;
    Value result;
    if (!object.is_namespace() && call_method(*this, object, callee_expr.name, args, &result)) return result;
    return call(get_attribute(object, callee_expr.name), args);
  }
  Value callee = eval(callee_expr);
  CallArgs args = eval_args(e.args, e.line);
  line_ = e.line;
  return call(callee, args);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) undefined_error(callee);
  if (!callee.is_callable()) fail("'" + type_name(callee) + "' object is not callable");
  int saved = line_;
  Value result = callee.call(*this, args);
  line_ = saved;
  return result;
}

Value Interpreter::eval_filter(const Expr& e) {
  Value v = eval(*e.operands[0]);
  CallArgs args = eval_args(e.args, e.line);
  line_ = e.line;
  return apply_filter(*this, e.name, v, args);
}

}  // namespace tandem::jinja
