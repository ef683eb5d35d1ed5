// Text helpers that work on UTF-8 the way Python works on str: lengths and
// slices count code points, whitespace is Python's str.isspace().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::jinja {

// Byte offset where each code point starts, plus one past the end.
std::vector<size_t> code_point_offsets(std::string_view s);
int64_t code_point_count(std::string_view s);
bool is_python_space(std::string_view s, size_t pos, size_t* width);
// str.strip(chars) family; an empty `chars` with `whitespace` strips spaces.
std::string strip(std::string_view s, bool left, bool right, bool whitespace, std::string_view chars = {});
// str.split() with no separator: runs of whitespace, at most maxsplit cuts.
std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit);
std::vector<std::string> rsplit_whitespace(std::string_view s, int64_t maxsplit);
std::vector<std::string> split(std::string_view s, std::string_view sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, std::string_view sep, int64_t maxsplit);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
// The size replace() would return, found without building it, so that a
// caller can refuse a result over its limit first.
size_t replaced_size(std::string_view s, std::string_view from, std::string_view to, int64_t count);
std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
// case_mapping.cpp: str.upper(), str.lower(), str.title() (a cased letter
// after a cased one is lowered, others title-cased), str.capitalize(),
// and Jinja's own title filter.
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
std::string jinja_title(std::string_view s);
// markupsafe's escape: & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

}  // namespace tandem::jinja
