#include "common/jinja/text.h"

namespace tandem::jinja {

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    // Continuation bytes (10xxxxxx) do not start a code point.
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(s.size());
  return offsets;
}

int64_t code_point_count(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_python_space(std::string_view s, size_t pos, size_t* width) {
  unsigned char c = static_cast<unsigned char>(s[pos]);
  *width = 1;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  // The rest of Python's str.isspace(): U+0085, U+00A0, U+1680,
  // U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
  if (c == 0xC2 && pos + 1 < s.size()) {
    unsigned char d = static_cast<unsigned char>(s[pos + 1]);
    if (d == 0x85 || d == 0xA0) { *width = 2; return true; }
    return false;
  }
  if (c < 0xE1 || c > 0xE3 || pos + 2 >= s.size()) return false;
  unsigned char d = static_cast<unsigned char>(s[pos + 1]), e = static_cast<unsigned char>(s[pos + 2]);
  bool space = (c == 0xE1 && d == 0x9A && e == 0x80) ||
               (c == 0xE2 && d == 0x80 && (e <= 0x8A || e == 0xA8 || e == 0xA9 || e == 0xAF)) ||
               (c == 0xE2 && d == 0x81 && e == 0x9F) || (c == 0xE3 && d == 0x80 && e == 0x80);
  if (space) *width = 3;
  return space;
}

namespace {

// The width of a "strippable" unit at pos, or 0.
size_t strippable_at(std::string_view s, size_t pos, bool whitespace, std::string_view chars) {
  if (whitespace) {
    size_t w;
    return is_python_space(s, pos, &w) ? w : 0;
  }
  auto offsets = code_point_offsets(s.substr(pos, 4));
  size_t w = offsets.size() > 1 ? offsets[1] : 1;
  std::string_view unit = s.substr(pos, w);
  for (auto& o : code_point_offsets(chars)) {
    if (o < chars.size()) {
      size_t end = o + 1;
      while (end < chars.size() && (static_cast<unsigned char>(chars[end]) & 0xC0) == 0x80) ++end;
      if (chars.substr(o, end - o) == unit) return w;
    }
  }
  return 0;
}

}  // namespace

std::string strip(std::string_view s, bool left, bool right, bool whitespace, std::string_view chars) {
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t w = strippable_at(s, begin, whitespace, chars);
      if (w == 0) break;
      begin += w;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      if (strippable_at(s.substr(0, end), start, whitespace, chars) != end - start) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t i = 0, w;
  while (true) {
    while (i < s.size() && is_python_space(s, i, &w)) i += w;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.emplace_back(s.substr(i));  // the rest, trailing whitespace and all, as Python
      break;
    }
    size_t start = i;
    while (i < s.size() && !is_python_space(s, i, &w)) ++i;
    parts.emplace_back(s.substr(start, i - start));
  }
  return parts;
}

std::vector<std::string> rsplit_whitespace(std::string_view s, int64_t maxsplit) {
  // Python's str.rsplit() mirrors split(): the tokens from the right, then
  // the rest with its leading whitespace kept.
  std::vector<std::string> parts;
  size_t end = s.size();
  auto space_before = [&](size_t at) {  // is the code point ending at `at` whitespace?
    size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t w;
    return is_python_space(s, start, &w) && start + w == at ? start : std::string_view::npos;
  };
  while (true) {
    for (size_t at; end > 0 && (at = space_before(end)) != std::string_view::npos;) end = at;
    if (end == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.emplace_back(s.substr(0, end));
      break;
    }
    size_t start = end;
    while (start > 0 && space_before(start) == std::string_view::npos) --start;
    parts.emplace_back(s.substr(start, end - start));
    end = start;
  }
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> split(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    size_t at = s.find(sep, start);
    if (at == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::vector<std::string> rsplit(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    if (end < sep.size()) break;
    size_t at = s.rfind(sep, end - sep.size());
    if (at == std::string_view::npos) break;
    parts.emplace_back(s.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  parts.emplace_back(s.substr(0, end));
  return {parts.rbegin(), parts.rend()};
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    auto offsets = code_point_offsets(s);
    int64_t done = 0;
    for (size_t k = 0; k + 1 < offsets.size(); ++k) {
      if (count < 0 || done < count) { out += to; ++done; }
      out += s.substr(offsets[k], offsets[k + 1] - offsets[k]);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += to;
    start = at + from.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

size_t replaced_size(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  size_t n = 0;
  if (from.empty()) {
    n = static_cast<size_t>(code_point_count(s)) + 1;
  } else {
    for (size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, at + from.size())) ++n;
  }
  if (count >= 0 && static_cast<size_t>(count) < n) n = static_cast<size_t>(count);
  return s.size() - n * from.size() + n * to.size();
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tandem::jinja
