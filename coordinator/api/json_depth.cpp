#include "coordinator/api/json_depth.h"

namespace tandem::api {

std::optional<std::size_t> find_nesting_beyond(std::string_view json_text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped byte cannot end the string, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        // A stray closer makes the text invalid (the parser says where); not
        // going below zero keeps it from hiding nesting that follows.
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace tandem::api
