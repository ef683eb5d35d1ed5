#include "coordinator/metrics/exposition_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace tandem::metrics {
namespace {

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// Magnitudes printed in plain decimals: up to 1e15, where counters of
// anything real end (beyond it doubles are integers or nearly, and 16+ digit
// runs are harder to read than an exponent), and
// fractions down to 1e-4, where Go's strconv, which writes the le labels of
// Prometheus's own client, turns to exponents too. Matching its spelling lets
// queries like le="0.0005" work the same against any exporter.
constexpr double kSmallestPlain = 1e-4;
constexpr double kLargestPlain = 1e15;

}  // namespace

bool is_valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool allowed = is_ascii_letter(c) || c == '_' || c == ':' || (i > 0 && is_ascii_digit(c));
    if (!allowed) return false;
  }
  return true;
}

bool is_valid_label_name(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool allowed = is_ascii_letter(c) || c == '_' || (i > 0 && is_ascii_digit(c));
    if (!allowed) return false;
  }
  return true;
}

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<std::uint8_t>(text[i]);
    std::size_t continuation_bytes = 0;
    std::uint32_t code_point = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      continuation_bytes = 1;
      code_point = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      continuation_bytes = 2;
      code_point = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      continuation_bytes = 3;
      code_point = lead & 0x07;
    } else {
      return false;
    }
    if (i + continuation_bytes >= text.size()) return false;
    for (std::size_t k = 1; k <= continuation_bytes; ++k) {
      const auto byte = static_cast<std::uint8_t>(text[i + k]);
      if ((byte & 0xC0) != 0x80) return false;
      code_point = (code_point << 6) | (byte & 0x3F);
    }
    // Overlong encodings, UTF-16 surrogates and code points past U+10FFFF
    // are not UTF-8 even when the bit pattern fits.
    constexpr std::uint32_t kSmallestForLength[] = {0, 0x80, 0x800, 0x10000};
    if (code_point < kSmallestForLength[continuation_bytes]) return false;
    if (code_point >= 0xD800 && code_point <= 0xDFFF) return false;
    if (code_point > 0x10FFFF) return false;
    i += continuation_bytes + 1;
  }
  return true;
}

std::string escape_label_value(std::string_view value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\': escaped += "\\\\"; break;
      case '"': escaped += "\\\""; break;
      case '\n': escaped += "\\n"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::string escape_help(std::string_view help) {
  std::string escaped;
  escaped.reserve(help.size());
  for (const char c : help) {
    switch (c) {
      case '\\': escaped += "\\\\"; break;
      case '\n': escaped += "\\n"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::string format_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // also -0, which would print as "-0"
  char buffer[64];
  const double magnitude = std::fabs(value);
  const bool plain = magnitude >= kSmallestPlain && magnitude < kLargestPlain;
  // Without a precision, to_chars writes the shortest text that parses back
  // to exactly this double, in the notation asked for.
  const auto result = plain
                          ? std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed)
                          : std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace tandem::metrics
