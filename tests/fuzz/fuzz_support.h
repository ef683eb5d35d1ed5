// What the fuzzers share: how a broken property is reported, and an
// independent UTF-8 check to test the code's own against.
//
// A fuzzer catches exactly the exceptions its code documents for bad input
// (tandem::Error, api::ApiError); anything else escapes and terminates, and
// libFuzzer keeps the input as a crash. A property that does not hold calls
// fuzz_fail(), which aborts the same way, after saying what broke.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tandem::fuzz {

[[noreturn]] inline void fuzz_fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void fuzz_check(bool holds, const std::string& what) {
  if (!holds) fuzz_fail(what);
}

// Whether `text` is well-formed UTF-8 (Unicode 15, table 3-7): no overlong
// forms, no surrogates, nothing above U+10FFFF. Written here from the table,
// not taken from the code under test.
inline bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (lead <= 0x7F) {
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    if (byte(i + 1) < low || byte(i + 1) > high) return false;
    for (size_t k = 2; k < length; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return false;
    i += length;
  }
  return true;
}

}  // namespace tandem::fuzz
