// The load generator's HTTP client: where to send (Endpoint, parse_url) and
// one streamed /v1/completions or /v1/chat/completions request measured into
// a RequestRecord (CompletionCall), on Boost.Beast with C++20 coroutines.
//
// Every request asks for a stream with usage ("stream": true,
// "stream_options": {"include_usage": true}), so TTFT and ITL are seen on
// the wire as vLLM's `bench serve` sees them. One connection per request:
// connecting to a loopback or LAN server costs far less than a token.
#pragma once

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without it

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

namespace asio = boost::asio;

struct Endpoint {
  std::string host;
  int port = 80;
  std::string path = "/v1/completions";
  std::string api_key;  // sent as "Authorization: Bearer <key>" when set
};

// "http://127.0.0.1:8080/v1/completions" → {127.0.0.1, 8080, /v1/completions}.
// No port means 80; no path (or "/") means default_path (/v1/completions, or
// /v1/chat/completions for a chat run); "[::1]" is an IPv6 host. https is not supported (Error kind unsupported, naming the URL);
// anything else that is not http://host[:port][/path] is invalid_argument.
Endpoint parse_url(const std::string& url,
                   const std::string& default_path = "/v1/completions");

// The Host header for an endpoint: "127.0.0.1:8080", an IPv6 host in
// brackets ("[::1]:8080"), as servers that check Host expect.
std::string host_header(const Endpoint& endpoint);

// `body` with "stream": true and "stream_options": {"include_usage": true}
// set, the rest untouched. A body that is not a JSON object is returned as it
// is, so the server's 400 for it is what the record shows.
std::string streaming_body(const std::string& body);

// The endpoint's addresses, looked up once for a whole run; Error naming the
// host when it does not resolve.
asio::ip::tcp::resolver::results_type resolve(asio::io_context& context, const Endpoint& endpoint);

using Clock = std::chrono::steady_clock;

// One request: connect, POST, read the event stream as it arrives. Not
// thread-safe: run() and cancel() must be called on the executor's thread
// (the load runner uses one thread). Keep the object alive until run() ends.
class CompletionCall {
 public:
  CompletionCall(asio::any_io_executor executor, const Endpoint& endpoint,
                 asio::ip::tcp::resolver::results_type addresses, Clock::duration timeout);

  // Sends `body` as it is (see streaming_body). The record's start is
  // seconds since `run_start`. Never throws: every failure is in the record
  // (status 0 when no response came; the server's message for a non-200;
  // the error event's message when the stream reports one).
  asio::awaitable<RequestRecord> run(const std::string& body, Clock::time_point run_start);

  // Ends the call now; its record fails with error `why`.
  void cancel(const std::string& why);

 private:
  asio::awaitable<RequestRecord> exchange(const std::string& body, Clock::time_point sent);
  std::string describe(const boost::system::error_code& ec, const char* operation) const;

  Endpoint endpoint_;
  asio::ip::tcp::resolver::results_type addresses_;
  Clock::duration timeout_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::array<char, 16384> chunk_{};  // body bytes as they arrive
  std::optional<std::string> cancelled_;
};

// One request on its own io_context, waiting for the whole stream: for
// warm-up requests and checks outside a load run.
RequestRecord complete_once(const Endpoint& endpoint, const std::string& body,
                            Clock::duration timeout = std::chrono::minutes(5));

}  // namespace tandem::loadtest
