// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast, one coroutine per
// connection, a pool of threads running the io_context.
//
// The server knows nothing about completions: it reads requests within the
// configured limits, answers what it cannot parse (400, 413) itself, and hands
// every good request to the Handler. Each connection lives on its own strand,
// so a handler's waits and writes never race its connection.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "coordinator/http/exchange.h"

namespace tandem::http {

using Handler = std::function<asio::awaitable<void>(Exchange&)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  int threads = 2;
  size_t max_body_bytes = 1 << 20;
  std::chrono::seconds idle_timeout{60};    // keep-alive connections with no request
  std::chrono::seconds request_read_timeout{30};  // one request's header and body
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, Handler handler);
  ~HttpServer();

  // Binds and starts the threads. Throws Error naming host:port when it cannot.
  void start();
  // The bound port.
  int port() const { return port_; }
  // Closes the listening socket; open connections go on.
  void stop_accepting();
  // Stops everything and joins the threads.
  void stop();
  asio::io_context& context() { return context_; }

 private:
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve_connection(beast::tcp_stream stream);

  HttpOptions options_;
  Handler handler_;
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace tandem::http
