// The statement half of the parser: text, {{ }} and {% %} tags into the tree.
#include "common/jinja/parser.h"

#include <algorithm>

#include "common/jinja/builtins.h"
#include "common/jinja/parser_impl.h"

namespace tandem::jinja {

// Statements until one of `ends` ({% endfor %}, ...): the tag's name is
// consumed and stored in *found; the rest of that tag is the caller's.
Body Parser::subparse(const std::vector<std::string>& ends, std::string* found) {
  DepthGuard guard(this);
  Body body;
  while (true) {
    const Token& t = peek();
    if (t.kind == TokenKind::end) {
      if (ends.empty()) return body;
      error("unexpected end of template: " + innermost_block() + " is not closed (expected " + expected(ends) + ")");
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

void Parser::statement(Body* out) {
  if (peek().kind != TokenKind::name) error("tag name expected");
  const Token& tag = next();
  auto s = std::make_unique<Stmt>();
  s->line = tag.line;
  const std::string& name = tag.text;
  bool opens_block = name == "if" || name == "for" || name == "set" || name == "macro" || name == "call" ||
                     name == "filter" || name == "generation";
  if (opens_block) open_blocks_.push_back({name, tag.line});
  struct Pop {
    std::vector<OpenBlock>* blocks;
    bool active;
    ~Pop() { if (active) blocks->pop_back(); }
  } pop{&open_blocks_, opens_block};
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
    std::string where = open_blocks_.empty() ? "" : "; " + innermost_block() + " is still open";
    error("encountered unknown tag '" + name + "'" + where);
  }
  out->push_back(std::move(s));
}

std::string Parser::innermost_block() const {
  if (open_blocks_.empty()) return "the template";
  return "the '" + open_blocks_.back().name + "' block from line " + std::to_string(open_blocks_.back().line);
}

std::string Parser::expected(const std::vector<std::string>& ends) {
  std::string out;
  for (size_t i = 0; i < ends.size(); ++i) out += (i == 0 ? "'" : i + 1 == ends.size() ? " or '" : ", '") + ends[i] + "'";
  return out;
}

void Parser::skip_name_if_matches(const std::string& name) {
  if (peek().kind == TokenKind::name && peek().text == name) next();
}

void Parser::parse_if(Stmt* s) {
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

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> targets;
  bool parenthesized = skip_op("(");
  do {
    targets.push_back(expect_name());
  } while (skip_op(",") && peek().kind == TokenKind::name);
  if (parenthesized) expect_op(")");
  return targets;
}

void Parser::parse_for(Stmt* s) {
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

void Parser::parse_set(Stmt* s) {
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

std::vector<Parameter> Parser::parse_params() {
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

namespace {

// Jinja2 refuses an unknown filter or test when it compiles the template,
// except inside an `if` (its test and its branches, not blocks nested in
// them) or an if-expression, where the error waits until it runs.
void check_names(const Expr& e, bool soft, int* error_line) {
  bool inner_soft = soft || e.kind == ExprKind::conditional;
  if (!soft && e.kind == ExprKind::filter && !is_filter_name(e.name)) {
    *error_line = e.line;
    fail("no filter named '" + e.name + "'");
  }
  if (!soft && e.kind == ExprKind::test && !is_test_name(e.name)) {
    *error_line = e.line;
    fail("no test named '" + e.name + "'");
  }
  for (auto& operand : e.operands) if (operand) check_names(*operand, inner_soft, error_line);
  for (auto& arg : e.args) check_names(*arg.value, inner_soft, error_line);
}

void check_names(const Body& body, bool soft, int* error_line) {
  for (auto& s : body) {
    bool if_block = s->kind == StmtKind::if_;
    if (s->expr) check_names(*s->expr, soft, error_line);
    if (s->condition) check_names(*s->condition, soft, error_line);
    for (auto& p : s->params) if (p.default_value) check_names(*p.default_value, soft, error_line);
    for (auto& branch : s->branches) {
      check_names(*branch.condition, true, error_line);
      check_names(branch.body, true, error_line);
    }
    check_names(s->body, false, error_line);
    check_names(s->else_body, if_block, error_line);
  }
}

}  // namespace

Body parse_tokens(const std::vector<Token>& tokens, int* error_line) {
  Parser parser(tokens, error_line);
  Body body = parser.run();
  check_names(body, false, error_line);
  return body;
}

}  // namespace tandem::jinja
