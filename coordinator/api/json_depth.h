// A bracket-depth pre-scan of a JSON text, run before any JSON parser sees it.
//
// A request body of a million '[' is valid-looking JSON to a parser until its
// end; recursive code anywhere downstream (a parser, a destructor, a dump)
// would overflow the stack on it. Counting brackets outside strings is linear,
// needs no memory, and lets the server refuse such a body before it is parsed.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tandem::api {

// The byte offset of the first '[' or '{' that opens level max_depth + 1 (the
// top-level value is level 1), or nullopt if the text never nests deeper than
// max_depth. Brackets inside strings (escapes included) do not count. The text
// need not be valid JSON: unbalanced closers are left for the parser to report.
std::optional<std::size_t> find_nesting_beyond(std::string_view json_text, int max_depth);

}  // namespace tandem::api
