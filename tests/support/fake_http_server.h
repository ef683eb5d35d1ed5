// FakeServer: a loopback HTTP server whose every answer a test chooses
// (status, body, delay, per method and path), so the soak's run and verdict
// can be shown to catch a server that misbehaves in one way at a time:
// 500s, a slow /health, requests left running after the traffic.
//
// One thread accepts; each connection gets a thread of its own that reads
// one request, answers it and closes (the soak sends one request per
// connection). The destructor stops accepting and joins every thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::test_support {

struct FakeAnswer {
  int status = 200;
  std::string body = "{}";
  std::string content_type = "application/json";
  std::chrono::milliseconds delay{0};  // waited before answering
};

// The metrics of a server with `running` requests running and nothing else in use.
inline std::string fake_metrics(int running) {
  return "tandem_num_requests_running " + std::to_string(running) +
         "\ntandem_num_requests_waiting 0\n"
         "tandem_kv_cache_blocks_used{model=\"target\"} 0\n"
         "tandem_kv_cache_blocks_used{model=\"draft\"} 0\n";
}

class FakeServer {
 public:
  using Handler = std::function<FakeAnswer(const std::string& method, const std::string& path,
                                           const std::string& body)>;

  explicit FakeServer(Handler handler)
      : handler_(std::move(handler)), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    accepting_ = std::thread([this] { accept_loop(); });
  }

  ~FakeServer() {
    stopping_ = true;
    {  // wake the blocking accept with a connection of our own
      boost::asio::io_context wake_io;
      boost::asio::ip::tcp::socket wake(wake_io);
      boost::system::error_code ignored;
      wake.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)}, ignored);
    }
    accepting_.join();
    std::vector<std::thread> connections;
    {
      std::lock_guard lock(mutex_);
      connections.swap(connections_);
    }
    for (std::thread& connection : connections) connection.join();
  }

  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  int port() const { return port_; }

 private:
  void accept_loop() {
    while (true) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_) return;
      if (ec) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    boost::system::error_code ec;
    http::read(socket, buffer, request, ec);
    if (ec) return;
    const FakeAnswer answer = handler_(std::string(request.method_string()), std::string(request.target()),
                                       request.body());
    std::this_thread::sleep_for(answer.delay);
    const std::string bytes = "HTTP/1.1 " + std::to_string(answer.status) + " Fake\r\nContent-Type: " +
                              answer.content_type + "\r\nContent-Length: " + std::to_string(answer.body.size()) +
                              "\r\nConnection: close\r\n\r\n" + answer.body;
    boost::asio::write(socket, boost::asio::buffer(bytes), ec);
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  }

  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accepting_;
  std::mutex mutex_;
  std::vector<std::thread> connections_;
};

}  // namespace tandem::test_support
