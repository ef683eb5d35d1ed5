// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast, one coroutine per
// connection, a pool of threads running the io_context.
//
// The server knows nothing about completions: it reads requests within the
// configured limits, answers what it cannot read (400, 408, 413, 501) itself,
// and hands every good request to the Handler. Each connection lives on its
// own strand, so a handler's waits and writes never race its connection.
//
// Limits that keep one client from starving the rest:
//  - at most max_connections open at once (clamped below what the process's
//    open-file limit allows); a new connection beyond it closes an idle
//    keep-alive connection to make room, or, when none is idle, is answered
//    503 and closed: clients hoarding connections cannot lock out /health;
//  - a keep-alive connection with no request for idle_timeout is closed;
//  - one request's header and body must arrive within request_read_timeout,
//    or the server answers 408 and closes (slow or short bodies, slowloris);
//  - when accept() fails (out of descriptors or memory) the accept loop
//    backs off instead of spinning.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "coordinator/http/exchange.h"
#include "coordinator/http/request_log.h"

namespace tandem::http {

using Handler = std::function<asio::awaitable<void>(Exchange&)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  int threads = 2;
  size_t max_body_bytes = 1 << 20;
  int max_connections = 512;  // open at once; see max_connections()
  std::chrono::milliseconds idle_timeout{15'000};  // keep-alive connections with no request
  std::chrono::milliseconds request_read_timeout{30'000};  // one request's header and body
  std::ostream* log = nullptr;  // where warnings and the request log go; nullptr: std::cerr
  // One line per request on `log` (request_log.h), in this format.
  bool log_requests = true;
  LogFormat log_format = LogFormat::text;
  // Told +1 when a connection opens and -1 when it closes (for a gauge).
  std::function<void(int change)> on_connections_changed;
  // Told of each connection refused for max_connections (a counter).
  std::function<void()> on_refused_connection;
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, Handler handler);
  ~HttpServer();

  // Binds and starts the threads. Throws Error naming host:port when it cannot.
  // Logs a warning when the open-file limit lowers max_connections.
  void start();
  // The bound port.
  int port() const { return port_; }
  // The connection limit in force: options.max_connections, or less when
  // the open-file limit (ulimit -n) leaves room for fewer.
  int max_connections() const { return max_connections_; }
  int open_connections() const { return open_.load(); }
  // Closes the listening socket; open connections go on, but every response
  // from now on closes its connection (Connection: close).
  void stop_accepting();
  // The end of a graceful shutdown: an idle connection answers the request a
  // client already sent (the handler decides what) and closes; a busy one
  // closes after its response. Waits up to `wait` for all to close, then stop().
  void close_connections(std::chrono::milliseconds wait);
  // Stops everything and joins the threads.
  void stop();
  asio::io_context& context() { return context_; }

 private:
  struct Connection;

  asio::awaitable<void> accept_loop();
  // Asks one idle connection to close, for a new one; false when none is idle.
  bool evict_idle_connection();
  asio::awaitable<void> refuse(asio::ip::tcp::socket socket);
  asio::awaitable<void> serve_connection(std::shared_ptr<Connection> connection);
  // Waits for the first byte of the next request; false when the connection
  // is to close instead (idle too long, closing, or gone).
  asio::awaitable<bool> wait_for_request(const std::shared_ptr<Connection>& connection);
  std::ostream& log() const;
  void log_request_line(const RequestLogEntry& entry) const;
  void count_open(int change);

  HttpOptions options_;
  Handler handler_;
  int max_connections_ = 0;
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::atomic<int> open_{0};
  std::atomic<int> refusing_{0};      // refusals still being written
  std::atomic<bool> draining_{false};  // stop_accepting() was called
  std::atomic<bool> closing_{false};   // close_connections() was called
  std::mutex connections_mutex_;
  std::set<std::shared_ptr<Connection>> connections_;  // after context_: destroyed first
  std::vector<std::thread> threads_;
};

}  // namespace tandem::http
