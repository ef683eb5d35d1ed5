// A string-keyed hash map that can be probed with a std::string_view, so
// lookups on the hot path (vocabulary, word cache) allocate nothing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tandem {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringViewHash, std::equal_to<>>;

}  // namespace tandem
