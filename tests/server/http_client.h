// A small blocking HTTP/1.1 client for the server tests: one keep-alive
// connection, whole responses (chunked bodies reassembled), and a raw mode
// for reading a stream part way and hanging up.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <string>
#include <vector>

namespace tandem::test_support {

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpClient {
 public:
  explicit HttpClient(int port) : socket_(context_) {
    namespace asio = boost::asio;
    asio::ip::tcp::resolver resolver(context_);
    asio::connect(socket_, resolver.resolve("127.0.0.1", std::to_string(port)));
  }

  HttpReply send(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::map<std::string, std::string>& headers = {}) {
    namespace http = boost::beast::http;
    http::request<http::string_body> request(http::string_to_verb(method), target, 11);
    request.set(http::field::host, "127.0.0.1");
    if (!body.empty() || method == "POST") request.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.prepare_payload();
    http::write(socket_, request);
    return read_reply();
  }

  HttpReply post_json(const std::string& target, const std::string& body,
                      const std::map<std::string, std::string>& headers = {}) {
    return send("POST", target, body, headers);
  }

  // Raw bytes, for malformed requests and streams read part way.
  void write_raw(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }
  // Reads until `marker` has arrived; returns everything read so far.
  std::string read_until(const std::string& marker) {
    boost::asio::read_until(socket_, boost::asio::dynamic_buffer(raw_), marker);
    return raw_;
  }
  HttpReply read_reply() {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(socket_, buffer_, parser);
    HttpReply reply;
    reply.status = static_cast<int>(parser.get().result_int());
    reply.body = parser.get().body();
    for (const auto& field : parser.get()) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = std::string(field.value());
    }
    return reply;
  }
  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  // Whether the server closed the connection (a read sees end of stream).
  bool server_closed() {
    boost::system::error_code ec;
    char byte;
    socket_.read_some(boost::asio::buffer(&byte, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

 private:
  boost::asio::io_context context_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::string raw_;
};

// The `data:` payloads of a server-sent event stream, in order.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    payloads.push_back(body.substr(at + 6, end - at - 6));
    at = end == std::string::npos ? body.size() : end + 2;
  }
  return payloads;
}

}  // namespace tandem::test_support
