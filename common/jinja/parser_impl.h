// The parser's state and helpers, shared by parser.cpp (statements) and
// parse_expression.cpp (expressions). Internal to common/jinja/.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/failure.h"
#include "common/jinja/lexer.h"

namespace tandem::jinja {


// Deeper nesting than this (brackets, blocks) is refused rather than
// risking the stack: no real template comes near it.
inline constexpr int kMaxDepth = 200;

inline ExprPtr make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

inline ExprPtr make(ExprKind kind, int line, ExprPtr a, ExprPtr b = nullptr) {
  auto e = make(kind, line);
  e->operands.push_back(std::move(a));
  if (b) e->operands.push_back(std::move(b));
  return e;
}

inline std::string describe(const Token& t) {
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

  // Statements (parser.cpp).
  Body subparse(const std::vector<std::string>& ends, std::string* found);
  void statement(Body* out);
  std::string innermost_block() const;
  static std::string expected(const std::vector<std::string>& ends);
  void skip_name_if_matches(const std::string& name);
  void parse_if(Stmt* s);
  std::vector<std::string> parse_targets();
  void parse_for(Stmt* s);
  void parse_set(Stmt* s);
  std::vector<Parameter> parse_params();

  // Expressions (parse_expression.cpp).
  ExprPtr parse_tuple(bool with_conditional);
  ExprPtr parse_expression(bool with_conditional);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr binary(const std::string& op, int line, ExprPtr a, ExprPtr b);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node, int line);
  std::vector<Argument> parse_args();
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filters(ExprPtr node, bool leading_pipe);

  const std::vector<Token>& tokens_;
  int* error_line_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  struct OpenBlock {
    std::string name;
    int line;
  };
  std::vector<OpenBlock> open_blocks_;  // for the messages about unclosed blocks
};

}  // namespace tandem::jinja
