// The parser a connection reads each request with, limited as the server's
// options say. One function, so that the HTTP fuzzer (tests/fuzz/) reads
// requests exactly as http_server.cpp does.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "coordinator/http/http_server.h"

namespace tandem::http {

using RequestParser = bhttp::request_parser<bhttp::string_body>;

// Beast's own header limit (8 KiB) stays; the body is the server's to limit.
inline void limit_request_parser(RequestParser& parser, const HttpOptions& options) {
  parser.body_limit(options.max_body_bytes);
}

}  // namespace tandem::http
