#include "common/tokenizer/byte_level.h"

#include "common/tokenizer/utf8.h"

namespace tandem::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> char_of_byte;
  std::array<int16_t, 324> byte_of_char;  // code point -> byte, -1 where none
};

// bytes_to_unicode() from GPT-2's encoder.py: printable Latin-1 bytes keep
// their code point; the other 68 bytes, in order, take U+0100..U+0143.
const Tables& tables() {
  static const Tables t = [] {
    Tables out;
    out.byte_of_char.fill(-1);
    char32_t next_free = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t cp = printable ? static_cast<char32_t>(b) : next_free++;
      utf8::append_code_point(out.char_of_byte[b], cp);
      out.byte_of_char[cp] = static_cast<int16_t>(b);
    }
    return out;
  }();
  return t;
}

}  // namespace

const std::string& char_of_byte(uint8_t byte) { return tables().char_of_byte[byte]; }

void append_encoded(std::string& out, std::string_view raw) {
  const Tables& t = tables();
  for (char ch : raw) out += t.char_of_byte[static_cast<uint8_t>(ch)];
}

void append_decoded(std::string& out, std::string_view token) {
  const Tables& t = tables();
  const size_t start = out.size();
  for (size_t i = 0; i < token.size();) {
    const utf8::Step s = utf8::step(token, i);
    if (!s.valid || s.code_point >= t.byte_of_char.size() || t.byte_of_char[s.code_point] < 0) {
      out.resize(start);
      out.append(token);
      return;
    }
    out.push_back(static_cast<char>(t.byte_of_char[s.code_point]));
    i += s.length;
  }
}

}  // namespace tandem::byte_level
