#include "coordinator/http/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <iostream>

#include "common/error.h"
#include "coordinator/api/api_error.h"
#include "coordinator/http/request_parser.h"

namespace tandem::http {
namespace {

// What the server answers by itself when a request cannot be read.
Response error_response(unsigned version, const api::ApiError& error) {
  Response response(static_cast<bhttp::status>(error.status), version);
  response.set(bhttp::field::content_type, "application/json");
  response.set(bhttp::field::server, "tandem");
  response.body() = api::error_json(error);
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

}  // namespace

HttpServer::HttpServer(HttpOptions options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)), acceptor_(context_) {}

HttpServer::~HttpServer() { stop(); }

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
  asio::co_spawn(context_, accept_loop(), asio::detached);
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { context_.run(); });
}

void HttpServer::stop_accepting() {
  asio::post(context_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

void HttpServer::stop() {
  context_.stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

asio::awaitable<void> HttpServer::accept_loop() {
  for (;;) {
    beast::error_code ec;
    // Each connection gets its own strand.
    asio::ip::tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(context_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) continue;  // a client that vanished while being accepted
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    beast::tcp_stream stream(std::move(socket));
    auto executor = stream.get_executor();
    asio::co_spawn(executor, serve_connection(std::move(stream)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::serve_connection(beast::tcp_stream stream) {
  beast::flat_buffer buffer;
  for (;;) {
    RequestParser parser;
    limit_request_parser(parser, options_);
    beast::error_code ec;
    stream.expires_after(options_.idle_timeout);
    co_await bhttp::async_read_header(stream, buffer, parser,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      // curl and others wait for this before sending a large body.
      if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go_on(bhttp::status::continue_, 11);
        co_await bhttp::async_write(stream, go_on, asio::redirect_error(asio::use_awaitable, ec));
      }
      stream.expires_after(options_.request_read_timeout);
      if (!ec) {
        co_await bhttp::async_read(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    if (ec == bhttp::error::body_limit) {
      Response response = error_response(
          11, api::payload_too_large("the request body exceeds server.max_body_bytes = " +
                                     std::to_string(options_.max_body_bytes) + " bytes"));
      co_await bhttp::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      break;
    }
    if (ec) {
      Response response = error_response(
          11, api::invalid_request(std::nullopt, std::string("malformed HTTP request: ") + ec.message()));
      co_await bhttp::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    stream.expires_never();

    Exchange exchange(stream, parser.release());
    bool failed = false;
    try {
      co_await handler_(exchange);
    } catch (const std::exception& error) {
      // Handlers answer their own errors; anything that escapes is a bug,
      // reported to this client and logged, and the server goes on.
      std::cerr << "tandem: internal error serving " << exchange.path() << ": " << error.what()
                << "\n";
      failed = true;
    }
    if (failed) {
      if (exchange.status() == 0) {
        co_await exchange.respond(
            error_response(exchange.request().version(), api::internal("internal server error")));
      }
      break;
    }
    if (!exchange.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream.close();
}

}  // namespace tandem::http
