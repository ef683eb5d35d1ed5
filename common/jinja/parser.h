// The parser: tokens (lexer.h) to the syntax tree (ast.h), with Jinja2's
// operator precedence, lowest first: `a if c else b`, or, and, not,
// comparisons (== != < <= > >= in, not in), + -, ~, * / // %, **, unary
// - +, then postfix (.attr, [index], [a:b:c], (call)), filters `|` and
// tests `is`, which bind tightest.
#pragma once

#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/lexer.h"

namespace tandem::jinja {

// Throws Failure; `*error_line` is set to the line of the token at fault.
Body parse_tokens(const std::vector<Token>& tokens, int* error_line);

}  // namespace tandem::jinja
