#include "coordinator/http/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <iostream>
#include <sstream>

#include "common/error.h"
#include "common/log_line.h"
#include "coordinator/api/api_error.h"
#include "coordinator/http/accept_backoff.h"
#include "coordinator/http/fd_budget.h"
#include "coordinator/http/request_parser.h"

namespace tandem::http {
namespace {

using namespace std::chrono_literals;

// Refusals being written at once, beyond max_connections (part of the
// descriptors fd_budget.h keeps spare); past it a connection is just closed.
constexpr int kMaxRefusing = 16;
// How long a closing connection keeps reading what the client still sends,
// so that the kernel does not answer it with a reset that destroys the
// response before the client has read it.
constexpr auto kLinger = 500ms;

// What the server answers by itself when a request cannot be read.
Response error_response(unsigned version, const api::ApiError& error) {
  Response response(static_cast<bhttp::status>(error.status), version);
  response.set(bhttp::field::content_type, "application/json");
  response.set(bhttp::field::server, "tandem");
  if (error.status == 503) response.set(bhttp::field::retry_after, "1");
  response.body() = api::error_json(error);
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << std::chrono::duration<double>(duration).count();
  return text.str();
}

// The request's Transfer-Encoding when it is one the server cannot read:
// anything but `chunked` alone (RFC 9112 says 501 for an unknown coding).
// `TE`, which only says what the client accepts in a response, is not this.
std::optional<std::string> unsupported_transfer_coding(const bhttp::request_header<>& header) {
  std::string codings;
  const auto [first, last] = header.equal_range(bhttp::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    if (!codings.empty()) codings += ", ";
    codings += std::string(field->value());
  }
  if (codings.empty() || beast::iequals(codings, "chunked")) return std::nullopt;
  return codings;
}

// What the server answers when reading a request failed with `ec`
// (`expired`: its read deadline passed); nullopt when there is no one to
// answer (the client closed or reset the connection).
std::optional<api::ApiError> read_failure_answer(const beast::error_code& ec, bool expired,
                                                 const HttpOptions& options) {
  if (expired) {
    return api::ApiError(408,
                         "the request's header and body did not arrive within "
                         "server.request_read_timeout_seconds = " +
                             seconds_text(options.request_read_timeout) + " s",
                         "timeout_error", std::nullopt, "request_timeout");
  }
  if (ec == bhttp::error::body_limit) {
    return api::payload_too_large("the request body exceeds server.max_body_bytes = " +
                                  std::to_string(options.max_body_bytes) + " bytes");
  }
  if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    return std::nullopt;
  }
  return api::invalid_request(std::nullopt, std::string("malformed HTTP request: ") + ec.message());
}

}  // namespace

// One open connection, shared by its coroutine and the server's registry.
// Everything in it runs on the connection's strand.
struct HttpServer::Connection {
  explicit Connection(asio::ip::tcp::socket socket)
      : stream(std::move(socket)), deadline(stream.get_executor()) {}

  // Reads pending on the socket end (operation_aborted) after `duration`,
  // with `expired` set. (beast's own expiry closes the socket, which would
  // leave no way to answer 408.)
  static void arm(const std::shared_ptr<Connection>& self, std::chrono::milliseconds duration) {
    self->expired = false;
    const unsigned generation = ++self->generation;
    self->deadline.expires_after(duration);
    self->deadline.async_wait([self, generation](const beast::error_code& ec) {
      if (ec || self->generation != generation) return;  // disarmed or re-armed since
      self->expired = true;
      beast::error_code ignored;
      self->stream.socket().cancel(ignored);
    });
  }
  void disarm() {
    ++generation;
    deadline.cancel();
  }

  // Answers `error`, then closes (see close_gracefully).
  asio::awaitable<void> answer_and_close(const std::shared_ptr<Connection>& self, unsigned version,
                                         const api::ApiError& error) {
    Response response = error_response(version, error);
    beast::error_code ec;
    stream.expires_after(5s);  // a client that does not read
    co_await bhttp::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
    stream.expires_never();
    if (!ec) co_await close_gracefully(self);
  }
  // Sends FIN, then reads and drops what the client still sends (a body the
  // server did not read) for a while, so that its answer is not lost to a reset.
  asio::awaitable<void> close_gracefully(const std::shared_ptr<Connection>& self) {
    beast::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    arm(self, std::chrono::duration_cast<std::chrono::milliseconds>(kLinger));
    char sink[4096];
    for (size_t dropped = 0; !ec && dropped < (1u << 20);) {
      dropped += co_await stream.socket().async_read_some(
          asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
    }
    disarm();
  }

  beast::tcp_stream stream;
  asio::steady_timer deadline;
  unsigned generation = 0;  // of the deadline armed last
  bool expired = false;     // the armed deadline passed
  // Waiting for the first byte of a request. Written on the strand, read by
  // the accept loop looking for a connection to evict.
  std::atomic<bool> idle{false};
  std::atomic<bool> evicted{false};  // to close when next idle, making room
};

HttpServer::HttpServer(HttpOptions options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)), acceptor_(context_) {}

HttpServer::~HttpServer() {
  stop();
  std::lock_guard lock(connections_mutex_);
  connections_.clear();
}

std::ostream& HttpServer::log() const { return options_.log ? *options_.log : std::cerr; }

void HttpServer::log_request_line(const RequestLogEntry& entry) const {
  if (options_.log_requests) log_request(log(), options_.log_format, entry);
}

void HttpServer::count_open(int change) {
  open_.fetch_add(change);
  if (options_.on_connections_changed) options_.on_connections_changed(change);
}

void HttpServer::start() {
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  try {
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(options_.host),
                                           static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
  } catch (const boost::system::system_error& error) {
    throw Error(ErrorKind::invalid_argument, "cannot listen on " + where + ": " + error.what());
  }
  max_connections_ = options_.max_connections;
  if (const int room = connections_within_fd_limit(); room < max_connections_) {
    log_line(log(), "warning: server.max_connections = ", max_connections_,
             " is more than the open-file limit (ulimit -n) leaves room for; allowing ", room,
             " connections (raise ulimit -n or lower server.max_connections)");
    max_connections_ = room;
  }
  asio::co_spawn(context_, accept_loop(), asio::detached);
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { context_.run(); });
}

void HttpServer::stop_accepting() {
  draining_.store(true);
  asio::post(context_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

void HttpServer::close_connections(std::chrono::milliseconds wait) {
  stop_accepting();
  closing_.store(true);
  {
    // An idle connection is woken; one not idle yet sees closing_ when it
    // next waits (both happen on its strand, so neither is missed).
    std::lock_guard lock(connections_mutex_);
    for (const std::shared_ptr<Connection>& connection : connections_) {
      asio::post(connection->stream.get_executor(), [connection] {
        beast::error_code ignored;
        if (connection->idle) connection->stream.socket().cancel(ignored);
      });
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (open_.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  stop();
}

void HttpServer::stop() {
  context_.stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

asio::awaitable<void> HttpServer::accept_loop() {
  AcceptBackoff backoff;
  asio::steady_timer pause(context_);
  for (;;) {
    beast::error_code ec;
    // Each connection gets its own strand.
    asio::ip::tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(context_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec == asio::error::connection_aborted) continue;  // the client left while queued
    if (ec) {
      // Out of descriptors or memory: the listening socket stays readable,
      // so an immediate retry would fail again at once, round and round.
      const std::chrono::milliseconds wait = backoff.failed();
      if (backoff.first_of_run()) {
        log_line(log(), "accepting a connection failed (", ec.message(),
                 "); retrying with waits of up to 1 s (open connections: ", open_.load(),
                 ", server.max_connections: ", max_connections_, ")");
      }
      pause.expires_after(wait);
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (const int failures = backoff.succeeded(); failures > 0)
      log_line(log(), "accepting connections again after ", failures, " failed attempts");
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    auto executor = socket.get_executor();
    if (open_.load() >= max_connections_ && !evict_idle_connection()) {
      if (refusing_.load() >= kMaxRefusing) continue;  // the socket closes here
      refusing_.fetch_add(1);
      asio::co_spawn(executor, refuse(std::move(socket)), asio::detached);
      continue;
    }
    count_open(+1);
    auto connection = std::make_shared<Connection>(std::move(socket));
    {
      std::lock_guard lock(connections_mutex_);
      connections_.insert(connection);
    }
    asio::co_spawn(executor, serve_connection(std::move(connection)), asio::detached);
  }
}

bool HttpServer::evict_idle_connection() {
  std::lock_guard lock(connections_mutex_);
  for (const std::shared_ptr<Connection>& connection : connections_) {
    if (!connection->idle.load() || connection->evicted.exchange(true)) continue;
    // If it got a request meanwhile, it closes after answering it instead.
    asio::post(connection->stream.get_executor(), [connection] {
      beast::error_code ignored;
      if (connection->idle.load()) connection->stream.socket().cancel(ignored);
    });
    return true;
  }
  return false;
}

asio::awaitable<void> HttpServer::refuse(asio::ip::tcp::socket socket) {
  if (options_.on_refused_connection) options_.on_refused_connection();
  const auto arrived = std::chrono::system_clock::now();
  const auto started = std::chrono::steady_clock::now();
  auto connection = std::make_shared<Connection>(std::move(socket));
  const api::ApiError refusal = api::unavailable(
      "the server has server.max_connections = " + std::to_string(max_connections_) +
      " connections open; retry in a moment, or reuse a keep-alive connection");
  co_await connection->answer_and_close(connection, 11, refusal);
  // Answered before any request was read: no method or path to log.
  RequestRecord record;
  record.error = refusal.message;
  log_request_line(RequestLogEntry{arrived, "-", "-", refusal.status,
                                   std::chrono::steady_clock::now() - started, &record});
  refusing_.fetch_sub(1);
}

asio::awaitable<bool> HttpServer::wait_for_request(const std::shared_ptr<Connection>& connection) {
  asio::ip::tcp::socket& socket = connection->stream.socket();
  beast::error_code ec;
  // A request the client sent before the server began to close is answered.
  if (closing_.load()) co_return socket.available(ec) > 0;
  if (connection->evicted.load()) co_return false;
  connection->idle = true;
  Connection::arm(connection, options_.idle_timeout);
  co_await socket.async_wait(asio::socket_base::wait_read,
                             asio::redirect_error(asio::use_awaitable, ec));
  connection->disarm();
  connection->idle = false;
  if (!ec) co_return true;  // a request, or the client's end of the connection
  if (closing_.load() && !connection->expired) co_return socket.available(ec) > 0;
  co_return false;  // idle too long, or evicted
}

asio::awaitable<void> HttpServer::serve_connection(std::shared_ptr<Connection> connection) {
  beast::tcp_stream& stream = connection->stream;
  beast::flat_buffer buffer;
  for (;;) {
    // A pipelined request may already be in the buffer.
    if (buffer.size() == 0 && !co_await wait_for_request(connection)) break;
    const auto arrived = std::chrono::system_clock::now();
    const auto started = std::chrono::steady_clock::now();
    RequestParser parser;
    limit_request_parser(parser, options_);
    beast::error_code ec;
    std::optional<api::ApiError> own_answer;  // what the server answers itself, then closes
    unsigned own_answer_version = 11;
    Connection::arm(connection, options_.request_read_timeout);
    co_await bhttp::async_read_header(stream, buffer, parser,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      if (const auto coding = unsupported_transfer_coding(parser.get())) {
        own_answer = api::ApiError(501,
                                   "Transfer-Encoding: " + *coding +
                                       " is not supported; send the body as it is, with "
                                       "Content-Length or Transfer-Encoding: chunked",
                                   "invalid_request_error");
        own_answer_version = parser.get().version();
      }
      // curl and others wait for this before sending a large body.
      if (!own_answer && beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go_on(bhttp::status::continue_, 11);
        co_await bhttp::async_write(stream, go_on, asio::redirect_error(asio::use_awaitable, ec));
      }
      if (!own_answer && !ec) {
        co_await bhttp::async_read(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    connection->disarm();
    if (!own_answer && ec) {
      own_answer = read_failure_answer(ec, connection->expired, options_);
      if (!own_answer) break;  // the client left or went quiet between requests
    }
    if (own_answer) {
      co_await connection->answer_and_close(connection, own_answer_version, *own_answer);
      // The method and path when the header was read that far.
      const bool header = parser.is_header_done();
      const std::string target = header ? std::string(parser.get().target()) : "-";
      RequestRecord record;
      if (own_answer->status >= 500) record.error = own_answer->message;
      log_request_line(RequestLogEntry{
          arrived, header ? parser.get().method_string() : std::string_view("-"),
          std::string_view(target).substr(0, std::string_view(target).find('?')),
          own_answer->status, std::chrono::steady_clock::now() - started, &record});
      break;
    }

    Exchange exchange(stream, parser.release(), &draining_);  // shutting down: no more requests
    bool failed = false;
    try {
      co_await handler_(exchange);
    } catch (const std::exception& error) {
      // Handlers answer their own errors; anything that escapes is a bug,
      // reported to this client and logged, and the server goes on.
      log_line(log(), "internal error serving ", exchange.path(), ": ", error.what());
      exchange.record().error = error.what();
      failed = true;
    }
    if (failed && exchange.status() == 0) {
      co_await exchange.respond(
          error_response(exchange.request().version(), api::internal("internal server error")));
    }
    // 499 (nginx's "client closed request"): the client left before any reply.
    log_request_line(RequestLogEntry{arrived, exchange.request().method_string(), exchange.path(),
                                     exchange.status() != 0 ? exchange.status() : 499,
                                     std::chrono::steady_clock::now() - started, &exchange.record()});
    if (failed) break;
    // Set when the response went out: closing now, when it promised to keep
    // the connection, would meet the client's next request with silence.
    if (!exchange.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream.close();
  {
    std::lock_guard lock(connections_mutex_);
    connections_.erase(connection);
  }
  count_open(-1);
}

}  // namespace tandem::http
