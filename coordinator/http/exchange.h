// Exchange: one HTTP request and the ways a handler may answer it.
//
// A handler either sends one whole response (respond) or opens an event
// stream (begin_stream, stream_write..., end_stream) written with chunked
// transfer encoding so the connection stays usable afterwards. Everything
// runs on the connection's strand; the handler's coroutine may wait on
// timers bound to executor() without racing the connection.
#pragma once

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <string>
#include <string_view>

#include "coordinator/http/request_record.h"

namespace tandem::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

using Request = bhttp::request<bhttp::string_body>;
using Response = bhttp::response<bhttp::string_body>;

class Exchange {
 public:
  // `server_draining`, when given, is read as the response goes out: once
  // it is set the response closes the connection (Connection: close).
  Exchange(beast::tcp_stream& stream, Request request,
           const std::atomic<bool>* server_draining = nullptr)
      : stream_(stream), request_(std::move(request)), server_draining_(server_draining) {}

  const Request& request() const { return request_; }
  // The path without the query string.
  std::string_view path() const;
  asio::any_io_executor executor() { return stream_.get_executor(); }

  // A header every response of this exchange carries, streams included
  // (the CORS headers a listed browser origin gets).
  void add_response_header(bhttp::field name, std::string_view value) { extra_headers_.set(name, value); }

  // Sends one response; keep-alive follows the request. Content-Length and
  // the Server header are filled in.
  asio::awaitable<void> respond(Response response);
  // Opens a `text/event-stream` response. False when the client is gone.
  asio::awaitable<bool> begin_stream();
  // One piece of the stream (already framed as SSE). False when the client is gone.
  asio::awaitable<bool> stream_write(std::string_view data);
  asio::awaitable<void> end_stream();

  // Whether the client is gone (a non-blocking look at the socket). Checked
  // while a request waits for the engine, so that a vanished client cancels
  // its session. A client that only shut down its sending side after a whole
  // request (half-close) is still there and gets its response; see the .cpp.
  bool peer_closed();
  // Whether the connection may serve another request afterwards.
  bool keep_alive() const { return keep_alive_; }
  // Whether the server is shutting down (see the constructor).
  bool draining() const { return server_draining_ && server_draining_->load(); }
  // The status sent (for metrics); 0 until something was sent.
  int status() const { return status_; }
  // What the handler learned about the request, for the request log
  // (request_record.h). A 5xx sent with respond() records the cause its
  // body gives, unless the handler recorded one.
  RequestRecord& record() { return record_; }
  const RequestRecord& record() const { return record_; }

 private:
  beast::tcp_stream& stream_;
  Request request_;
  const std::atomic<bool>* server_draining_;
  bhttp::fields extra_headers_;
  bool keep_alive_ = true;
  int status_ = 0;
  RequestRecord record_;
  bool probed_ = false;  // peer_closed() sent its interim response
  bool gone_ = false;    // peer_closed() saw the connection reset
};

// Builds a response with a body and content type.
Response make_response(const Request& request, bhttp::status status, std::string body,
                       std::string_view content_type = "application/json");

}  // namespace tandem::http
