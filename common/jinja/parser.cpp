#include "common/jinja/parser.h"

#include <algorithm>

#include "common/jinja/failure.h"

namespace tandem::jinja {

namespace {

// Deeper nesting than this (brackets, blocks) is refused rather than
// risking the stack: no real template comes near it.
constexpr int kMaxDepth = 200;

ExprPtr make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

ExprPtr make(ExprKind kind, int line, ExprPtr a, ExprPtr b = nullptr) {
  auto e = make(kind, line);
  e->operands.push_back(std::move(a));
  if (b) e->operands.push_back(std::move(b));
  return e;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::text: return "text";
    case TokenKind::variable_begin: return "'{{'";
    case TokenKind::variable_end: return "end of print statement";
    case TokenKind::block_begin: return "'{%'";
    case TokenKind::block_end: return "end of statement block";
    case TokenKind::end: return "end of template";
    case TokenKind::string: return "string";
    default: return "'" + t.text + "'";
  }
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int* error_line) : tokens_(tokens), error_line_(error_line) {}

  Body run() {
    Body body = subparse({}, nullptr);
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : parser(p) {
      if (++parser->depth_ > kMaxDepth) parser->error("template nested too deeply");
    }
    ~DepthGuard() { --parser->depth_; }
    Parser* parser;
  };

  [[noreturn]] void error(const std::string& message) {
    *error_line_ = peek().line;
    fail(message);
  }

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == TokenKind::op && peek(ahead).text == op; }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::name && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error(std::string("expected '") + op + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::name) error("expected a name, got " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::block_end) error("expected end of statement block, got " + describe(peek()));
    next();
  }

  // Statements until one of `ends` ({% endfor %}, ...): the tag's name is
  // consumed and stored in *found; the rest of that tag is the caller's.
  Body subparse(const std::vector<std::string>& ends, std::string* found) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::end) {
        if (ends.empty()) return body;
        error("unexpected end of template, expected '" + ends.back() + "'");
      }
      if (t.kind == TokenKind::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::text;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == TokenKind::variable_begin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::output;
        s->line = t.line;
        s->expr = parse_tuple(true);
        if (peek().kind != TokenKind::variable_end) error("expected end of print statement, got " + describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::block_begin) {
        const Token& tag = peek(1);
        if (tag.kind == TokenKind::name && std::find(ends.begin(), ends.end(), tag.text) != ends.end()) {
          next();
          *found = next().text;
          return body;
        }
        next();
        statement(&body);
      } else {
        error("unexpected " + describe(t));
      }
    }
  }

  void statement(Body* out) {
    if (peek().kind != TokenKind::name) error("tag name expected");
    const Token& tag = next();
    auto s = std::make_unique<Stmt>();
    s->line = tag.line;
    const std::string& name = tag.text;
    if (name == "if") {
      parse_if(s.get());
    } else if (name == "for") {
      parse_for(s.get());
    } else if (name == "set") {
      parse_set(s.get());
    } else if (name == "macro") {
      s->kind = StmtKind::macro;
      s->name = expect_name();
      s->params = parse_params();
      expect_block_end();
      std::string found;
      int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = subparse({"endmacro"}, &found);
      loop_depth_ = saved;
      skip_name_if_matches(s->name);
      expect_block_end();
    } else if (name == "call") {
      s->kind = StmtKind::call_block;
      if (is_op("(")) s->params = parse_params();
      s->expr = parse_expression(true);
      if (s->expr->kind != ExprKind::call) error("expected a call after 'call'");
      expect_block_end();
      std::string found;
      s->body = subparse({"endcall"}, &found);
      expect_block_end();
    } else if (name == "filter") {
      s->kind = StmtKind::filter_block;
      s->expr = parse_filters(make(ExprKind::block_body, s->line), false);
      expect_block_end();
      std::string found;
      s->body = subparse({"endfilter"}, &found);
      expect_block_end();
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) error("'" + name + "' outside of a loop");
      s->kind = name == "break" ? StmtKind::break_ : StmtKind::continue_;
      expect_block_end();
    } else if (name == "generation") {
      // transformers' tag marking the assistant's tokens: only its body renders.
      expect_block_end();
      std::string found;
      Body inner = subparse({"endgeneration"}, &found);
      expect_block_end();
      for (auto& stmt : inner) out->push_back(std::move(stmt));
      return;
    } else if (name == "include" || name == "extends" || name == "import" || name == "from" || name == "block") {
      error("the '" + name + "' tag is not supported in chat templates");
    } else {
      error("encountered unknown tag '" + name + "'");
    }
    out->push_back(std::move(s));
  }

  void skip_name_if_matches(const std::string& name) {
    if (peek().kind == TokenKind::name && peek().text == name) next();
  }

  void parse_if(Stmt* s) {
    s->kind = StmtKind::if_;
    while (true) {
      Branch branch;
      branch.condition = parse_expression(true);
      expect_block_end();
      std::string found;
      branch.body = subparse({"elif", "else", "endif"}, &found);
      s->branches.push_back(std::move(branch));
      if (found == "elif") continue;
      if (found == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"}, &found);
      }
      expect_block_end();
      return;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    bool parenthesized = skip_op("(");
    do {
      targets.push_back(expect_name());
    } while (skip_op(",") && peek().kind == TokenKind::name);
    if (parenthesized) expect_op(")");
    return targets;
  }

  void parse_for(Stmt* s) {
    s->kind = StmtKind::for_;
    s->targets = parse_targets();
    if (!skip_name("in")) error("expected 'in', got " + describe(peek()));
    s->expr = parse_tuple(false);
    if (skip_name("if")) s->condition = parse_expression(false);
    if (is_name("recursive")) error("recursive loops are not supported");
    expect_block_end();
    std::string found;
    ++loop_depth_;
    s->body = subparse({"else", "endfor"}, &found);
    --loop_depth_;
    if (found == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"}, &found);
    }
    expect_block_end();
  }

  void parse_set(Stmt* s) {
    s->kind = StmtKind::set;
    if (peek().kind == TokenKind::name && is_op(".", 1)) {
      s->targets.push_back(next().text);
      next();
      s->attribute = expect_name();
    } else {
      s->targets = parse_targets();
    }
    if (skip_op("=")) {
      s->expr = parse_tuple(true);
      expect_block_end();
      return;
    }
    if (!s->attribute.empty() || s->targets.size() != 1) error("expected '='");
    s->kind = StmtKind::set_block;
    if (is_op("|")) s->expr = parse_filters(make(ExprKind::block_body, s->line), true);
    expect_block_end();
    std::string found;
    s->body = subparse({"endset"}, &found);
    expect_block_end();
  }

  std::vector<Parameter> parse_params() {
    std::vector<Parameter> params;
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      Parameter p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      params.push_back(std::move(p));
    }
    next();
    return params;
  }

  // Expressions ---------------------------------------------------------

  // `a, b` makes a tuple where a statement takes one expression.
  ExprPtr parse_tuple(bool with_conditional) {
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

  ExprPtr parse_expression(bool with_conditional) {
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

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      int line = next().line;
      left = make(ExprKind::logical_or, line, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      int line = next().line;
      left = make(ExprKind::logical_and, line, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(this);
      int line = next().line;
      return make(ExprKind::logical_not, line, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr binary(const std::string& op, int line, ExprPtr a, ExprPtr b) {
    auto e = make(ExprKind::binary, line, std::move(a), std::move(b));
    e->name = op;
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      left = binary(t.text, t.line, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const Token& t = next();
      left = binary("~", t.line, std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      left = binary(t.text, t.line, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& t = next();
      left = binary("**", t.line, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node, int line) {
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

  std::vector<Argument> parse_args() {
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

  ExprPtr parse_call(ExprPtr callee) {
    int line = peek().line;
    auto call = make(ExprKind::call, line, std::move(callee));
    call->args = parse_args();
    return call;
  }

  // `| name(args)` filters and `is [not] name args` tests, left to right.
  // For {% filter %}, `leading_pipe` is false: the first filter has no `|`.
  ExprPtr parse_filters(ExprPtr node, bool leading_pipe) {
    bool first = true;
    while (true) {
      if ((first && !leading_pipe) || is_op("|")) {
        if (!(first && !leading_pipe)) next();
        int line = peek().line;
        auto f = make(ExprKind::filter, line, std::move(node));
        f->name = expect_name();
        while (is_op(".")) { next(); f->name += "." + expect_name(); }
        if (is_op("(")) f->args = parse_args();
        node = std::move(f);
      } else if (is_name("is")) {
        int line = next().line;
        auto test = make(ExprKind::test, line, std::move(node));
        test->negated = skip_name("not");
        test->name = expect_name();
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

  const std::vector<Token>& tokens_;
  int* error_line_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_tokens(const std::vector<Token>& tokens, int* error_line) {
  Parser parser(tokens, error_line);
  return parser.run();
}

}  // namespace tandem::jinja
