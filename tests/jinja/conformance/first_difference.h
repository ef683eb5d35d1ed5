// first_difference(expected, actual): where two renderings part, said so a
// failure can be read at a glance: the byte offset and a few bytes either
// side of it in both texts, escaped as JSON strings (newlines show as \n).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace tandem::jinja_conformance {

// The offset of the first byte where a and b differ; the shorter length
// when one is a prefix of the other; npos when they are equal.
inline size_t first_difference_offset(const std::string& a, const std::string& b) {
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) return i;
  }
  return a.size() == b.size() ? std::string::npos : common;
}

// text[from, to) widened to whole UTF-8 characters, so context never shows
// half a character (which would print as invalid bytes).
inline std::string excerpt(const std::string& text, size_t from, size_t to) {
  auto continuation = [&](size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  to = std::min(to, text.size());
  from = std::min(from, to);
  while (from > 0 && continuation(from)) --from;
  while (continuation(to)) ++to;
  // error_handler::replace: a template may render invalid UTF-8 on purpose.
  return nlohmann::json(text.substr(from, to - from))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "" when equal; else the offset, the shared text before it and how each
// text goes on from there.
inline std::string describe_first_difference(const std::string& expected, const std::string& actual,
                                             size_t context = 60) {
  const size_t at = first_difference_offset(expected, actual);
  if (at == std::string::npos) return "";
  // The texts may part inside a character: the shared part then ends where
  // that character starts, and each side shows its own whole character.
  size_t split = at;
  while (split > 0 && split < expected.size() &&
         (static_cast<unsigned char>(expected[split]) & 0xC0) == 0x80) {
    --split;
  }
  const size_t before = split > context ? split - context : 0;
  return "first difference at byte " + std::to_string(at) + " (expected " +
         std::to_string(expected.size()) + " bytes, got " + std::to_string(actual.size()) +
         ")\n  both:     ..." + excerpt(expected, before, split) +
         "\n  expected: " + excerpt(expected, split, split + context) + "..." +
         "\n  actual:   " + excerpt(actual, split, split + context) + "...";
}

}  // namespace tandem::jinja_conformance
