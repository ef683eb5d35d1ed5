// The expression half of the parser: Jinja2's precedence climbing, from
// the if-expression down to literals, postfix, filters and tests.
#include "common/jinja/parser_impl.h"

namespace tandem::jinja {

// `a, b` makes a tuple where a statement takes one expression.
ExprPtr Parser::parse_tuple(bool with_conditional) {
  int line = peek().line;
  ExprPtr first = parse_expression(with_conditional);
  if (!is_op(",")) return first;
  auto tuple = make(ExprKind::tuple, line);
  tuple->operands.push_back(std::move(first));
  while (skip_op(",")) {
    if (peek().kind == TokenKind::block_end || peek().kind == TokenKind::variable_end || is_name("if")) break;
    tuple->operands.push_back(parse_expression(with_conditional));
  }
  return tuple;
}

ExprPtr Parser::parse_expression(bool with_conditional) {
  DepthGuard guard(this);
  ExprPtr value = parse_or();
  while (with_conditional && is_name("if")) {
    int line = next().line;
    auto cond = make(ExprKind::conditional, line);
    cond->operands.push_back(std::move(value));
    cond->operands.push_back(parse_or());
    cond->operands.push_back(skip_name("else") ? parse_expression(true) : nullptr);
    value = std::move(cond);
  }
  return value;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    int line = next().line;
    left = make(ExprKind::logical_or, line, std::move(left), parse_and());
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    int line = next().line;
    left = make(ExprKind::logical_and, line, std::move(left), parse_not());
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(this);
    int line = next().line;
    return make(ExprKind::logical_not, line, parse_not());
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  int line = peek().line;
  ExprPtr first = parse_math1();
  ExprPtr node;
  while (true) {
    std::string op;
    const Token& t = peek();
    if (t.kind == TokenKind::op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                    t.text == ">" || t.text == ">=")) {
      op = t.text;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && is_name("in", 1)) {
      op = "not in";
      next();
      next();
    } else {
      break;
    }
    if (!node) {
      node = make(ExprKind::compare, line);
      node->operands.push_back(std::move(first));
    }
    node->ops.push_back(op);
    node->operands.push_back(parse_math1());
  }
  return node ? std::move(node) : std::move(first);
}

ExprPtr Parser::binary(const std::string& op, int line, ExprPtr a, ExprPtr b) {
  auto e = make(ExprKind::binary, line, std::move(a), std::move(b));
  e->name = op;
  return e;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = next();
    left = binary(t.text, t.line, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const Token& t = next();
    left = binary("~", t.line, std::move(left), parse_math2());
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = next();
    left = binary(t.text, t.line, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const Token& t = next();
    left = binary("**", t.line, std::move(left), parse_unary(true));
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Token& t = next();
    node = make(t.text == "-" ? ExprKind::negate : ExprKind::plus, t.line, parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filters(std::move(node), true);
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = peek();
  switch (t.kind) {
    case TokenKind::name: {
      next();
      auto e = make(ExprKind::literal, t.line);
      if (t.text == "true" || t.text == "True") e->value = Value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->value = Value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->value = Value::none();
      else { e->kind = ExprKind::name; e->name = t.text; }
      return e;
    }
    case TokenKind::string: {
      // Adjacent string literals join, as in Python.
      std::string joined;
      while (peek().kind == TokenKind::string) joined += next().text;
      auto e = make(ExprKind::literal, t.line);
      e->value = Value::string(std::move(joined));
      return e;
    }
    case TokenKind::integer: {
      next();
      auto e = make(ExprKind::literal, t.line);
      e->value = Value::integer(t.integer);
      return e;
    }
    case TokenKind::floating: {
      next();
      auto e = make(ExprKind::literal, t.line);
      e->value = Value::floating(t.floating);
      return e;
    }
    default: break;
  }
  if (is_op("(")) {
    next();
    if (skip_op(")")) return make(ExprKind::tuple, t.line);
    ExprPtr inner = parse_expression(true);
    if (is_op(",")) {
      auto tuple = make(ExprKind::tuple, t.line);
      tuple->operands.push_back(std::move(inner));
      while (skip_op(",") && !is_op(")")) tuple->operands.push_back(parse_expression(true));
      inner = std::move(tuple);
    }
    expect_op(")");
    return inner;
  }
  if (is_op("[")) {
    next();
    auto list = make(ExprKind::list, t.line);
    while (!is_op("]")) {
      if (!list->operands.empty()) expect_op(",");
      if (is_op("]")) break;
      list->operands.push_back(parse_expression(true));
    }
    next();
    return list;
  }
  if (is_op("{")) {
    next();
    auto dict = make(ExprKind::dict, t.line);
    while (!is_op("}")) {
      if (!dict->operands.empty()) expect_op(",");
      if (is_op("}")) break;
      dict->operands.push_back(parse_expression(true));
      expect_op(":");
      dict->operands.push_back(parse_expression(true));
    }
    next();
    return dict;
  }
  error("unexpected " + describe(t));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    const Token& t = peek();
    if (is_op(".")) {
      next();
      if (peek().kind == TokenKind::integer) {
        auto index = make(ExprKind::literal, t.line);
        index->value = Value::integer(next().integer);
        node = make(ExprKind::subscript, t.line, std::move(node), std::move(index));
      } else {
        auto attr = make(ExprKind::attribute, t.line, std::move(node));
        attr->name = expect_name();
        node = std::move(attr);
      }
    } else if (is_op("[")) {
      next();
      node = parse_subscript(std::move(node), t.line);
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node, int line) {
  ExprPtr start = is_op(":") ? nullptr : parse_expression(true);
  if (skip_op("]")) return make(ExprKind::subscript, line, std::move(node), std::move(start));
  expect_op(":");
  auto slice = make(ExprKind::slice, line);
  slice->operands.push_back(std::move(node));
  slice->operands.push_back(std::move(start));
  slice->operands.push_back(is_op(":") || is_op("]") ? nullptr : parse_expression(true));
  ExprPtr step;
  if (skip_op(":") && !is_op("]")) step = parse_expression(true);
  slice->operands.push_back(std::move(step));
  expect_op("]");
  return slice;
}

std::vector<Argument> Parser::parse_args() {
  std::vector<Argument> args;
  expect_op("(");
  while (!is_op(")")) {
    if (!args.empty()) expect_op(",");
    if (is_op(")")) break;
    Argument a;
    if (peek().kind == TokenKind::name && is_op("=", 1)) {
      a.name = next().text;
      next();
    } else if (!args.empty() && !args.back().name.empty()) {
      error("positional argument follows keyword argument");
    }
    a.value = parse_expression(true);
    args.push_back(std::move(a));
  }
  next();
  return args;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  int line = peek().line;
  auto call = make(ExprKind::call, line, std::move(callee));
  call->args = parse_args();
  return call;
}

// `| name(args)` filters and `is [not] name args` tests, left to right.
// For {% filter %}, `leading_pipe` is false: the first filter has no `|`.
ExprPtr Parser::parse_filters(ExprPtr node, bool leading_pipe) {
  bool first = true;
  while (true) {
    if ((first && !leading_pipe) || is_op("|")) {
      if (!(first && !leading_pipe)) next();
      int line = peek().line;
      auto f = make(ExprKind::filter, line, std::move(node));
      f->name = expect_name();
      while (is_op(".")) {  // Jinja reads `a.b` as one (unknown) name
        next();
        f->name += "." + expect_name();
      }
      if (is_op("(")) f->args = parse_args();
      node = std::move(f);
    } else if (is_name("is")) {
      int line = next().line;
      auto test = make(ExprKind::test, line, std::move(node));
      test->negated = skip_name("not");
      test->name = expect_name();
      while (is_op(".")) {
        next();
        test->name += "." + expect_name();
      }
      if (is_op("(")) {
        test->args = parse_args();
      } else if ((peek().kind == TokenKind::name || peek().kind == TokenKind::string ||
                  peek().kind == TokenKind::integer || peek().kind == TokenKind::floating || is_op("(") ||
                  is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) error("you cannot chain multiple tests with is");
        Argument a;
        a.value = parse_postfix(parse_primary());
        test->args.push_back(std::move(a));
      }
      node = std::move(test);
    } else if (is_op("(") && !first) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
    first = false;
  }
}

}  // namespace tandem::jinja
