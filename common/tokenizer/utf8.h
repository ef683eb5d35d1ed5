// UTF-8 helpers shared by the tokenizer's encoder, decoder and normalizer.
//
// Decoding is lossy the way Rust's String::from_utf8_lossy and the WHATWG
// decoder are: each maximal invalid subpart becomes one U+FFFD. The streaming
// decoder relies on that rule being local, so the text it emits piece by piece
// is the same as decoding everything at once.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::utf8 {

// The sequence starting at byte `at`: a complete code point (valid), or the
// maximal invalid subpart to replace with one U+FFFD. truncated: invalid only
// because the input ends inside a sequence that could still be completed.
struct Step {
  size_t length = 0;
  bool valid = false;
  bool truncated = false;
  char32_t code_point = 0;  // set when valid
};
Step step(std::string_view bytes, size_t at);

// Byte offset of the first invalid byte, or npos when all of it is valid UTF-8.
size_t find_invalid(std::string_view bytes);

// Appends bytes, with every maximal invalid subpart replaced by U+FFFD.
void append_lossy(std::string& out, std::string_view bytes);

// Length of the prefix of bytes that can be emitted now: all but a trailing
// sequence that is incomplete but may still be completed by later bytes.
size_t complete_prefix(std::string_view bytes);

void append_code_point(std::string& out, char32_t code_point);

// Code points of valid UTF-8 (callers check with find_invalid first).
std::vector<char32_t> decode(std::string_view valid_bytes);

// Unicode White_Space, the set Rust's char::is_whitespace uses (added-token
// lstrip/rstrip strip exactly these).
bool is_white_space(char32_t code_point);

}  // namespace tandem::utf8
