#include "coordinator/http/exchange.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>

#include "coordinator/http/request_log.h"

namespace tandem::http {

namespace {

constexpr std::string_view kServerName = "tandem";

// Whether the kernel has seen the peer reset the connection. After an end of
// stream recv() reports 0 even once a reset followed, but TCP_INFO's state
// moves from CLOSE_WAIT to CLOSE.
bool connection_reset(int fd) {
  tcp_info info{};
  socklen_t size = sizeof info;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 && info.tcpi_state == TCP_CLOSE;
}

}  // namespace

std::string_view Exchange::path() const {
  std::string_view target(request_.target().data(), request_.target().size());
  return target.substr(0, target.find('?'));
}

Response make_response(const Request& request, bhttp::status status, std::string body,
                       std::string_view content_type) {
  Response response(status, request.version());
  response.set(bhttp::field::content_type, content_type);
  response.body() = std::move(body);
  return response;
}

asio::awaitable<void> Exchange::respond(Response response) {
  response.set(bhttp::field::server, kServerName);
  for (const auto& field : extra_headers_) response.set(field.name(), field.value());
  keep_alive_ = keep_alive_ && request_.keep_alive() && response.keep_alive() && !draining();
  response.keep_alive(keep_alive_);
  response.prepare_payload();
  status_ = static_cast<int>(response.result_int());
  if (status_ >= 500 && record_.error.empty()) record_.error = failure_cause(response.body());
  beast::error_code ec;
  co_await bhttp::async_write(stream_, response, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) keep_alive_ = false;
}

asio::awaitable<bool> Exchange::begin_stream() {
  bhttp::response<bhttp::empty_body> header(bhttp::status::ok, request_.version());
  header.set(bhttp::field::server, kServerName);
  header.set(bhttp::field::content_type, "text/event-stream");
  header.set(bhttp::field::cache_control, "no-cache");
  for (const auto& field : extra_headers_) header.set(field.name(), field.value());
  keep_alive_ = keep_alive_ && request_.keep_alive() && !draining();
  header.keep_alive(keep_alive_);
  header.chunked(true);
  status_ = 200;
  bhttp::response_serializer<bhttp::empty_body> serializer(header);
  beast::error_code ec;
  co_await bhttp::async_write_header(stream_, serializer,
                                     asio::redirect_error(asio::use_awaitable, ec));
  if (ec) keep_alive_ = false;
  co_return !ec;
}

asio::awaitable<bool> Exchange::stream_write(std::string_view data) {
  beast::error_code ec;
  co_await asio::async_write(stream_, bhttp::make_chunk(asio::buffer(data.data(), data.size())),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) keep_alive_ = false;
  co_return !ec;
}

asio::awaitable<void> Exchange::end_stream() {
  beast::error_code ec;
  co_await asio::async_write(stream_, bhttp::make_chunk_last(),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) keep_alive_ = false;
}

bool Exchange::peer_closed() {
  if (gone_) return true;
  char byte;
  const auto fd = stream_.socket().native_handle();
  const ssize_t got = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got > 0) return false;  // the client sent more (a pipelined request): still there
  if (got < 0) {
    gone_ = errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // a reset
    return gone_;
  }
  // End of stream: the client shut down its sending side. It may have closed
  // the whole socket, or only that half (shutdown(SHUT_WR) after a complete
  // request) and still read. A byte written tells them apart: a closed socket
  // answers it with a reset, seen at the next look. Once the response
  // has begun its own writes do that; before, an interim "100 Continue",
  // which an HTTP/1.1 client must accept before any response. HTTP/1.0
  // allows no interim response: there, end of stream counts as gone.
  if (connection_reset(fd)) return gone_ = true;
  if (status_ != 0) return false;
  if (request_.version() < 11) return gone_ = true;
  if (!probed_) {
    probed_ = true;
    constexpr std::string_view kInterim = "HTTP/1.1 100 Continue\r\n\r\n";
    if (::send(fd, kInterim.data(), kInterim.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
      return gone_ = true;
  }
  return false;
}

}  // namespace tandem::http
