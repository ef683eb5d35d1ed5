#include "common/tokenizer/utf8.h"

namespace tandem::utf8 {
namespace {

// For a lead byte: the sequence length and the allowed range of the second
// byte (tighter than 80..BF for E0, ED, F0, F4: that is what excludes
// overlong forms, surrogates and code points above U+10FFFF).
struct Lead {
  int length;
  unsigned char second_min;
  unsigned char second_max;
};

Lead lead_of(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};  // 80..C1 and F5..FF never start a sequence
}

}  // namespace

Step step(std::string_view bytes, size_t at) {
  const auto b0 = static_cast<unsigned char>(bytes[at]);
  const Lead lead = lead_of(b0);
  if (lead.length == 1) return {1, true, false, b0};
  if (lead.length == 0) return {1, false, false, 0};
  char32_t cp = b0 & (0xFF >> (lead.length + 1));
  for (int k = 1; k < lead.length; ++k) {
    if (at + k >= bytes.size()) return {static_cast<size_t>(k), false, true, 0};
    const auto b = static_cast<unsigned char>(bytes[at + k]);
    const unsigned char lo = k == 1 ? lead.second_min : 0x80;
    const unsigned char hi = k == 1 ? lead.second_max : 0xBF;
    if (b < lo || b > hi) return {static_cast<size_t>(k), false, false, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {static_cast<size_t>(lead.length), true, false, cp};
}

size_t find_invalid(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {  // ASCII fast path
      ++i;
      continue;
    }
    const Step s = step(bytes, i);
    if (!s.valid) return i;
    i += s.length;
  }
  return std::string_view::npos;
}

void append_lossy(std::string& out, std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const Step s = step(bytes, i);
    if (s.valid) {
      out.append(bytes.substr(i, s.length));
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
    }
    i += s.length;
  }
}

size_t complete_prefix(std::string_view bytes) {
  // Only the last three bytes can belong to an unfinished sequence.
  const size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t i = from; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte starts nothing
    const Step s = step(bytes, i);
    if (s.truncated) return i;
  }
  return bytes.size();
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<char32_t> decode(std::string_view bytes) {
  std::vector<char32_t> out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Step s = step(bytes, i);
    out.push_back(s.valid ? s.code_point : U'\uFFFD');
    i += s.length;
  }
  return out;
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace tandem::utf8
