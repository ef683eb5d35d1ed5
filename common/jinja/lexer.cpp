#include "common/jinja/lexer.h"

#include <cerrno>
#include <cstdlib>

#include "common/jinja/failure.h"
#include "common/jinja/template.h"
#include "common/jinja/text.h"
#include "common/tokenizer/utf8.h"

namespace tandem::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string rstrip_all(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && is_space(text[end - 1])) --end;
  return std::string(text.substr(0, end));
}

class Lexer {
 public:
  Lexer(std::string source, const Options& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
      if (tag == src_.size()) {
        emit_text(text);
        advance_to(tag);
        break;
      }
      char type = src_[tag + 1];
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      text = apply_left_strip(text, sign, type != '{', line_starting);
      emit_text(text);
      advance_to(tag);
      if (type == '#') {
        comment();
      } else if (type == '%' && is_raw(tag)) {
        raw();
      } else {
        tag_body(type == '{');
      }
    }
    tokens_.push_back({TokenKind::end, "", line_});
    return std::move(tokens_);
  }

  int line() const { return line_; }

 private:
  // The start of the next {{, {% or {#, or the end of the source.
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  // `-` strips all whitespace before the tag; otherwise lstrip_blocks
  // strips spaces between the line's start and a block or comment tag.
  std::string apply_left_strip(const std::string& text, char sign, bool block_or_comment, bool line_starting) const {
    if (sign == '-') return rstrip_all(text);
    if (sign == '+' || !options_.lstrip_blocks || !block_or_comment) return text;
    size_t line_start = text.rfind('\n');
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    if (line_start == 0 && !line_starting) return text;
    if (line_start == text.size()) return text;
    for (size_t i = line_start; i < text.size(); ++i) if (!is_space(text[i])) return text;
    return text.substr(0, line_start);
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenKind::text, text, line_});
  }

  void advance_to(size_t to) {
    for (size_t i = pos_; i < to && i < src_.size(); ++i) line_ += src_[i] == '\n';
    pos_ = to;
  }

  // After a tag's end: `-` eats all whitespace, trim_blocks one newline.
  void after_tag_end(char sign, bool block) {
    if (sign == '-') {
      size_t i = pos_;
      while (i < src_.size() && is_space(src_[i])) ++i;
      advance_to(i);
    } else if (block && sign != '+' && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
    }
  }

  void comment() {
    size_t body = pos_ + 2;
    if (body < src_.size() && (src_[body] == '-' || src_[body] == '+')) ++body;
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) fail("missing end of comment tag");
    char sign = end > body ? src_[end - 1] : '\0';
    advance_to(end + 2);
    after_tag_end(sign == '-' || sign == '+' ? sign : '\0', true);
  }

  // {% raw %} (optionally {%- raw -%}) at `tag`?
  bool is_raw(size_t tag) const {
    size_t i = tag + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && is_space(src_[i])) ++i;
    return src_.compare(i, 2, "%}") == 0 || src_.compare(i, 3, "-%}") == 0;
  }

  void raw() {
    size_t end_of_begin = src_.find("%}", pos_);
    char sign = src_[end_of_begin - 1] == '-' ? '-' : '\0';
    advance_to(end_of_begin + 2);
    after_tag_end(sign == '-' ? '-' : '+', true);  // no trim_blocks after raw, as Jinja2
    bool line_starting = src_[pos_ - 1] == '\n';
    for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t j = i + 2;
      char begin_sign = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j++] : '\0';
      while (j < src_.size() && is_space(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < src_.size() && is_space(src_[j])) ++j;
      char end_sign = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_sign = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) continue;
      emit_text(apply_left_strip(src_.substr(pos_, i - pos_), begin_sign, true, line_starting));
      advance_to(j + 2);
      after_tag_end(end_sign, true);
      return;
    }
    fail("missing end of raw directive");
  }

  void tag_body(bool variable) {
    int tag_line = line_;
    size_t i = pos_ + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    advance_to(i);
    tokens_.push_back({variable ? TokenKind::variable_begin : TokenKind::block_begin, "", line_});
    int depth = 0;  // open brackets: inside them }} and %} are operators
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        line_ = tag_line;
        fail(variable ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      }
      if (depth == 0) {
        const char* close = variable ? "}}" : "%}";
        char sign = src_[pos_];
        size_t at = (sign == '-' || sign == '+') ? pos_ + 1 : pos_;
        if (src_.compare(at, 2, close) == 0 && (at == pos_ || sign == '-' || !variable)) {
          tokens_.push_back({variable ? TokenKind::variable_end : TokenKind::block_end, "", line_});
          advance_to(at + 2);
          after_tag_end(at == pos_ ? '\0' : sign, !variable);
          return;
        }
      }
      lex_one(&depth);
    }
  }

  void lex_one(int* depth) {
    char c = src_[pos_];
    if (is_name_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      tokens_.push_back({TokenKind::name, src_.substr(pos_, end - pos_), line_});
      advance_to(end);
    } else if (is_digit(c)) {
      number();
    } else if (c == '\'' || c == '"') {
      string_literal(c);
    } else {
      static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
      for (const char* op : kTwo) {
        if (src_.compare(pos_, 2, op) == 0) {
          tokens_.push_back({TokenKind::op, op, line_});
          advance_to(pos_ + 2);
          return;
        }
      }
      if (std::string_view("+-*/%~|.,:()[]{}<>=").find(c) == std::string_view::npos) {
        fail(std::string("unexpected char '") + c + "'");
      }
      if (c == '(' || c == '[' || c == '{') ++*depth;
      if (c == ')' || c == ']' || c == '}') {
        if (*depth == 0) fail(std::string("unexpected '") + c + "'");
        --*depth;
      }
      tokens_.push_back({TokenKind::op, std::string(1, c), line_});
      advance_to(pos_ + 1);
    }
  }

  // Integers and floats as Jinja2 reads them: digits with single
  // underscores, a fraction and/or an exponent make a float.
  void number() {
    std::string digits;
    size_t i = pos_;
    auto read_digits = [&] {
      while (i < src_.size() && (is_digit(src_[i]) || (src_[i] == '_' && i + 1 < src_.size() && is_digit(src_[i + 1])))) {
        if (src_[i] != '_') digits += src_[i];
        ++i;
      }
    };
    read_digits();
    bool is_float = false;
    if (i + 1 < src_.size() && src_[i] == '.' && is_digit(src_[i + 1])) {
      is_float = true;
      digits += src_[i++];
      read_digits();
    }
    if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
      size_t j = i + 1;
      if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
      if (j < src_.size() && is_digit(src_[j])) {
        is_float = true;
        digits += 'e';
        digits += src_.substr(i + 1, j - i - 1);
        i = j;
        read_digits();
      }
    }
    Token token{is_float ? TokenKind::floating : TokenKind::integer, src_.substr(pos_, i - pos_), line_};
    errno = 0;
    if (is_float) {
      token.floating = std::strtod(digits.c_str(), nullptr);
    } else {
      token.integer = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("integer literal " + token.text + " is too large");
    }
    tokens_.push_back(std::move(token));
    advance_to(i);
  }

  void string_literal(char quote) {
    int start_line = line_;
    std::string value;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) {
        line_ = start_line;
        fail("unterminated string");
      }
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') { value += c; ++i; continue; }
      if (i + 1 >= src_.size()) { ++i; continue; }
      i = escape(i + 1, &value);
    }
    tokens_.push_back({TokenKind::string, value, start_line});
    advance_to(i + 1);
  }

  // Python's unicode-escape decoding of the escape after a backslash at
  // i - 1; an unknown escape keeps its backslash. Returns the next index.
  size_t escape(size_t i, std::string* out) {
    char c = src_[i];
    switch (c) {
      case 'n': *out += '\n'; return i + 1;
      case 't': *out += '\t'; return i + 1;
      case 'r': *out += '\r'; return i + 1;
      case '\\': *out += '\\'; return i + 1;
      case '\'': *out += '\''; return i + 1;
      case '"': *out += '"'; return i + 1;
      case 'a': *out += '\a'; return i + 1;
      case 'b': *out += '\b'; return i + 1;
      case 'f': *out += '\f'; return i + 1;
      case 'v': *out += '\v'; return i + 1;
      case '\n': return i + 1;  // a backslash before a newline joins the lines
      default: break;
    }
    if (c >= '0' && c <= '7') {
      uint32_t cp = 0;
      size_t j = i;
      while (j < i + 3 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7') cp = cp * 8 + static_cast<uint32_t>(src_[j++] - '0');
      utf8::append_code_point(*out, cp);
      return j;
    }
    size_t width = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (width == 0) { *out += '\\'; *out += c; return i + 1; }
    uint32_t cp = 0;
    for (size_t k = 0; k < width; ++k) {
      char h = i + 1 + k < src_.size() ? src_[i + 1 + k] : '\0';
      int digit = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (digit < 0) fail("truncated \\" + std::string(1, c) + " escape in a string");
      cp = cp * 16 + static_cast<uint32_t>(digit);
    }
    if (cp > 0x10FFFF) fail("illegal Unicode character in a string");
    utf8::append_code_point(*out, cp);
    return i + 1 + width;
  }

  std::string src_;
  const Options& options_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

// Jinja2 reads \r\n and \r as \n, and drops one newline at the very end
// (keep_trailing_newline is off in transformers).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const Options& options, int* error_line) {
  Lexer lexer(normalize_newlines(source), options);
  try {
    return lexer.run();
  } catch (const Failure&) {
    *error_line = lexer.line();
    throw;
  }
}

}  // namespace tandem::jinja
