// The HTTP request path: arbitrary bytes arrive on a connection and are read
// as HttpServer::serve_connection reads them (coordinator/http/http_server.cpp):
// Beast's request parser limited as the server limits it
// (limit_request_parser, with the default deployment's max_body_bytes), the
// header first, then the body, request after request on one buffer while
// the client keeps the connection alive. What the server would answer by
// itself (413, 400 for a malformed request) must be an OpenAI-shaped error;
// every request that parses goes on as ApiService::handle takes it without
// an engine: the gate's checks (request_gate.h: Host, Origin, preflight,
// the API key's header, the body's type), each refusal a 4xx, the route
// looked up (find_route), and the body of a POST to the completions, chat,
// tokenize or detokenize route parsed, rendered and tokenized (route_checks.h,
// which says what must hold).
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>

#include "coordinator/http/exchange.h"
#include "coordinator/http/request_parser.h"
#include "coordinator/server/request_gate.h"
#include "coordinator/server/routes.h"
#include "tests/fuzz/route_checks.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tandem::fuzz::fuzz_check;

// A connection carries a handful of pipelined requests at most in practice;
// the bound keeps one input's work small.
constexpr int kMaxRequestsPerConnection = 16;

tandem::http::HttpOptions server_options() {
  tandem::http::HttpOptions options;
  options.max_body_bytes =
      static_cast<size_t>(tandem::fuzz::served_model().config.server.max_body_bytes);
  return options;
}

// The error the server writes itself must serialize as JSON.
void check_own_answer(const tandem::api::ApiError& error) {
  const auto body = nlohmann::json::parse(tandem::api::error_json(error), nullptr, false);
  fuzz_check(!body.is_discarded(), "the server's own error body is not JSON");
}

// A refusal of the gate: the client's fault (4xx), and a JSON body.
void check_refusal(const std::optional<tandem::api::ApiError>& refusal) {
  fuzz_check(refusal->status >= 400 && refusal->status < 500, "the gate refused with a non-4xx status");
  check_own_answer(*refusal);
}

// ApiService::handle up to the engine, in request_gate.h's order; only a
// request every check passes reaches a route's body parser.
void handle(const tandem::http::Exchange& exchange) {
  namespace gate = tandem::gate;
  static const gate::Access access;  // the default: loopback names, no other origin
  const tandem::fuzz::ServedModel& served = tandem::fuzz::served_model();
  const tandem::http::Request& request = exchange.request();
  const std::string_view path = exchange.path();
  fuzz_check(path.find('?') == std::string_view::npos, "a path kept its query string");
  if (auto refusal = gate::refuse_caller(request, access)) return check_refusal(refusal);
  (void)gate::is_cross_origin(request);
  const tandem::Route* route = tandem::find_route(path);
  if (route && request.method() == bhttp::verb::options) {
    const tandem::http::Response answer = gate::preflight_response(request, bhttp::to_string(route->method));
    fuzz_check(answer.result_int() == 204, "a preflight was not answered 204");
    return;
  }
  if (!route || request.method() != route->method) return;  // 404, 405
  if (auto refusal = gate::refuse_credentials(request, "key")) check_refusal(refusal);  // then goes on: no key configured
  if (route->method != bhttp::verb::post) return;
  if (auto refusal = gate::refuse_body_type(request)) return check_refusal(refusal);
  const std::string& body = request.body();
  if (route->path == "/v1/completions") tandem::fuzz::completion_route(body, served);
  if (route->path == "/v1/chat/completions") tandem::fuzz::chat_route(body, served);
  if (route->path == "/tokenize") tandem::fuzz::tokenize_route(body, served);
  if (route->path == "/detokenize") tandem::fuzz::detokenize_route(body, served);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::http::HttpOptions options = server_options();
  static asio::io_context context;
  // The connection a handler's Exchange would write to; never written here.
  static beast::tcp_stream unused_connection(context);

  // The client's bytes, then its end of the connection closes.
  beast::test::stream connection(context, std::string_view(reinterpret_cast<const char*>(data), size));
  connection.close_remote();
  beast::flat_buffer buffer;
  for (int served = 0; served < kMaxRequestsPerConnection; ++served) {
    tandem::http::RequestParser parser;
    tandem::http::limit_request_parser(parser, options);
    beast::error_code ec;
    bhttp::read_header(connection, buffer, parser, ec);
    // (An `Expect: 100-continue` gets its interim answer here; it changes
    // nothing in what is read.)
    if (!ec) bhttp::read(connection, buffer, parser, ec);
    if (ec == bhttp::error::body_limit) {
      check_own_answer(tandem::api::payload_too_large("the request body exceeds server.max_body_bytes"));
      break;
    }
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof) break;
    if (ec) {
      check_own_answer(tandem::api::invalid_request(
          std::nullopt, std::string("malformed HTTP request: ") + ec.message()));
      break;
    }
    const tandem::http::Exchange exchange(unused_connection, parser.release());
    handle(exchange);
    if (!exchange.request().keep_alive()) break;
  }
  return 0;
}
