// The lexer: template source to tokens. Text between tags becomes text
// tokens, with Jinja2's whitespace control applied here (`-` on either
// side of a tag, trim_blocks, lstrip_blocks, `+`); the inside of `{{ }}`
// and `{% %}` becomes expression tokens; comments and `{% raw %}` are
// resolved here too, so the parser sees only text, outputs and statements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


namespace tandem::jinja {

struct Options;  // template.h

enum class TokenKind {
  text,
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,
  integer,
  floating,
  op,   // punctuation and operators: + - * / // % ** ~ | . , : ( ) [ ] { } = == != < <= > >=
  end,  // end of the source
};

struct Token {
  TokenKind kind;
  std::string text;  // the text, name, operator, or the string literal's value
  int line = 1;
  int64_t integer = 0;
  double floating = 0;
};

// Throws Failure naming the problem; the Failure's line is in `*line`.
std::vector<Token> tokenize(std::string_view source, const Options& options, int* error_line);

}  // namespace tandem::jinja
