// The one parser of request bodies: a JSON text into a Json value, strictly.
//
// Stricter than nlohmann's own parse where a lenient reading would leave the
// client guessing what the server understood:
//  - a key given twice in one object ({"max_tokens": 5, "max_tokens": 500})
//    is refused, naming the key and where it is (nlohmann keeps the last);
//  - anything after the value but whitespace is refused, a NUL byte included
//    (nlohmann's lexer takes a NUL for the end of the text and stops there).
// Nesting is limited before any parsing (json_depth.h). Both routes, and
// anything else that reads a request body, parse it here.
#pragma once

#include <string_view>

#include "coordinator/api/json_fields.h"

namespace tandem::api {

// Throws ApiError 400: with no param for malformed JSON, nesting too deep or
// bytes after the value (the message gives the byte offset), and with param
// naming the path of a duplicate key ("messages[1].role").
Json parse_request_body(std::string_view body);

}  // namespace tandem::api
