// FakeChatServer: a minimal /v1/chat/completions server on loopback for the
// load generator's chat tests, so they run without a model and without the
// server's chat endpoint (built elsewhere). It speaks the OpenAI streaming
// chat format: a role-only first chunk, one chunk per word of the reply, a
// chunk with finish_reason, the usage chunk when stream_options.include_usage
// asks for it, then [DONE].
//
// Its reply is a pure function of the request (reply_to), so a test can say
// what the next turn's history must hold without asking the code under test.
// Its usage claims 1000 + (words of the reply) completion tokens and the
// number of characters of all message contents as prompt tokens: figures no
// client could get by counting chunks, so a test sees that usage was read.
//
// One thread accepts; each connection gets its own thread, which reads one
// request, answers it and closes (the load generator sends one request per
// connection). The destructor stops accepting and joins every thread; a reply
// stops early when the client hangs up.
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
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tandem::test_support {

struct FakeChatServerOptions {
  // Waited before each content chunk (the role chunk goes out at once).
  std::chrono::milliseconds chunk_delay{0};
  // The status for a request; anything but 200 gets an OpenAI error object
  // whose message is FakeChatServer::kFailureMessage.
  std::function<int(const nlohmann::json& body)> status_for;
};

class FakeChatServer {
 public:
  using Options = FakeChatServerOptions;
  static constexpr const char* kFailureMessage = "the fake was told to fail this request";

  // "You said: " and the last message's content.
  static std::string reply_to(const nlohmann::json& body) {
    return "You said: " + body["messages"].back()["content"].get<std::string>();
  }

  static std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> pieces;  // " word" after the first, as tokenizers cut text
    std::istringstream in(text);
    for (std::string word; in >> word;) pieces.push_back(pieces.empty() ? word : " " + word);
    return pieces;
  }

  static int prompt_tokens_for(const nlohmann::json& body) {
    size_t chars = 0;
    for (const auto& message : body["messages"]) chars += message["content"].get<std::string>().size();
    return static_cast<int>(chars);
  }

  static int completion_tokens_for(const nlohmann::json& body) {
    return 1000 + static_cast<int>(words_of(reply_to(body)).size());
  }

  explicit FakeChatServer(Options options = {})
      : options_(std::move(options)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    accepting_ = std::thread([this] { accept_loop(); });
  }

  ~FakeChatServer() {
    stopping_ = true;
    {  // wake the blocking accept with a connection of our own
      boost::asio::io_context wake_io;
      boost::asio::ip::tcp::socket wake(wake_io);
      boost::system::error_code ignored;
      wake.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)},
                   ignored);
    }
    accepting_.join();
    std::vector<std::thread> connections;
    {  // joined without the lock, which a connection takes to log its request
      std::lock_guard lock(mutex_);
      connections.swap(connections_);
    }
    for (std::thread& connection : connections) connection.join();
  }

  FakeChatServer(const FakeChatServer&) = delete;
  FakeChatServer& operator=(const FakeChatServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Every request body received so far, in arrival order (unparsable ones as null).
  std::vector<nlohmann::json> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

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
    const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(body.is_discarded() ? nlohmann::json() : body);
    }
    const int status = options_.status_for ? options_.status_for(body) : 200;
    if (status != 200 || body.is_discarded()) {
      const std::string error =
          nlohmann::json{{"error", {{"message", kFailureMessage}, {"type", "fake"}}}}.dump();
      send(socket, "HTTP/1.1 " + std::to_string(body.is_discarded() ? 400 : status) +
                       " Error\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(error.size()) + "\r\nConnection: close\r\n\r\n" + error);
      return;
    }
    // No Content-Length: the body runs to the end of the connection.
    if (!send(socket, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"))
      return;
    auto chunk = [](nlohmann::json delta, nlohmann::json finish) {
      nlohmann::json event = {{"object", "chat.completion.chunk"},
                              {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
      return "data: " + event.dump() + "\n\n";
    };
    if (!send(socket, chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) return;
    for (const std::string& word : words_of(reply_to(body))) {
      std::this_thread::sleep_for(options_.chunk_delay);
      if (!send(socket, chunk({{"content", word}}, nullptr))) return;
    }
    if (!send(socket, chunk(nlohmann::json::object(), "stop"))) return;
    const bool usage = body.contains("stream_options") &&
                       body["stream_options"].value("include_usage", false);
    if (usage) {
      const int prompt = prompt_tokens_for(body), completion = completion_tokens_for(body);
      nlohmann::json event = {
          {"object", "chat.completion.chunk"},
          {"choices", nlohmann::json::array()},
          {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion},
                     {"total_tokens", prompt + completion}}},
          {"speculation", {{"target_steps", 1}, {"draft_tokens", 0}, {"accepted_tokens", 0}}}};
      if (!send(socket, "data: " + event.dump() + "\n\n")) return;
    }
    send(socket, "data: [DONE]\n\n");
    boost::system::error_code ignored;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  }

  static bool send(boost::asio::ip::tcp::socket& socket, const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket, boost::asio::buffer(bytes), ec);
    return !ec;
  }

  Options options_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accepting_;
  mutable std::mutex mutex_;
  std::vector<std::thread> connections_;
  std::vector<nlohmann::json> requests_;
};

}  // namespace tandem::test_support
