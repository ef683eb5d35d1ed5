// Python's str.upper/lower/title/capitalize for the scripts chat text
// mostly uses: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic,
// with Python's special cases there (ß upper-cases to "SS", İ lower-cases
// to "i̇", a final Σ lower-cases to ς). Other scripts pass unchanged.
#include <cstdint>

#include "common/jinja/text.h"
#include "common/tokenizer/utf8.h"

namespace tandem::jinja {

namespace {

// In Latin Extended-A most letters come in (upper, lower) pairs; in these
// ranges the upper case is at the even code point, elsewhere at the odd.
bool even_upper_pair_range(uint32_t c) {
  return (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177) || (c >= 0x460 && c <= 0x481) ||
         (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F);
}
bool odd_upper_pair_range(uint32_t c) { return (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E); }

uint32_t to_upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (even_upper_pair_range(c)) return (c & 1) ? c - 1 : c;
  if (odd_upper_pair_range(c)) return (c & 1) ? c : c - 1;
  if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB)) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

uint32_t to_lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (even_upper_pair_range(c)) return (c & 1) ? c : c + 1;
  if (odd_upper_pair_range(c)) return (c & 1) ? c + 1 : c;
  if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool is_cased(uint32_t c) { return to_upper(c) != c || to_lower(c) != c || c == 0xDF || c == 0x130; }

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const utf8::Step step = utf8::step(s, i);
    if (step.valid) {
      out.push_back(step.code_point);
    } else {
      // Bytes that are not UTF-8 pass through as themselves (as code points
      // below 0x100 they would be re-encoded, so mark them).
      for (size_t k = 0; k < step.length; ++k)
        out.push_back(0x80000000u | static_cast<unsigned char>(s[i + k]));
    }
    i += step.length;
  }
  return out;
}

void append(std::string& out, uint32_t c) {
  if (c & 0x80000000u) out += static_cast<char>(c & 0xFF);
  else utf8::append_code_point(out, c);
}

void append_upper(std::string& out, uint32_t c) {
  if (c == 0xDF) out += "SS";
  else append(out, to_upper(c));
}

void append_lower(std::string& out, const std::vector<uint32_t>& cps, size_t i) {
  uint32_t c = cps[i];
  if (c == 0x130) { out += "i\xCC\x87"; return; }
  if (c == 0x3A3) {
    // Final sigma: after a cased letter and not before one.
    bool after = i > 0 && is_cased(cps[i - 1]);
    bool before = i + 1 < cps.size() && is_cased(cps[i + 1]);
    append(out, after && !before ? 0x3C2 : 0x3C3);
    return;
  }
  append(out, to_lower(c));
}

void append_title(std::string& out, uint32_t c) {
  if (c == 0xDF) out += "Ss";
  else append(out, to_upper(c));
}

}  // namespace

std::string upper(std::string_view s) {
  std::string out;
  for (uint32_t c : decode(s)) append_upper(out, c);
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  auto cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  auto cps = decode(s);
  bool previous_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    bool cased = is_cased(cps[i]);
    if (cased && previous_cased) append_lower(out, cps, i);
    else if (cased) append_title(out, cps[i]);
    else append(out, cps[i]);
    previous_cased = cased;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  auto cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) append_title(out, cps[i]);
    else append_lower(out, cps, i);
  }
  return out;
}

// Jinja's title filter: each word (after -, whitespace, (, {, [ or <)
// gets its first character upper-cased and the rest lower-cased.
std::string jinja_title(std::string_view s) {
  std::string out;
  auto cps = decode(s);
  bool word_start = true;
  for (size_t i = 0; i < cps.size(); ++i) {
    uint32_t c = cps[i];
    size_t w;
    std::string one;
    append(one, c);
    bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(one, 0, &w);
    if (separator) { out += one; word_start = true; continue; }
    if (word_start) append_upper(out, c);
    else append_lower(out, cps, i);
    word_start = false;
  }
  return out;
}

}  // namespace tandem::jinja
