// The server tests' HTTP client (http_client.h) on Boost.Asio and Beast.
#include "tests/server/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace tandem::test_support {

namespace asio = boost::asio;
namespace http = boost::beast::http;

struct HttpClient::Connection {
  asio::io_context context;
  asio::ip::tcp::socket socket{context};
  boost::beast::flat_buffer buffer;
  std::string raw;
};

HttpClient::HttpClient(int port) : connection_(std::make_unique<Connection>()) {
  asio::ip::tcp::resolver resolver(connection_->context);
  asio::connect(connection_->socket, resolver.resolve("127.0.0.1", std::to_string(port)));
}

HttpClient::~HttpClient() = default;

HttpReply HttpClient::send(const std::string& method, const std::string& target, const std::string& body,
                           const std::map<std::string, std::string>& headers) {
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!body.empty() || method == "POST") request.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  http::write(connection_->socket, request);
  return read_reply();
}

void HttpClient::write_raw(const std::string& bytes) { asio::write(connection_->socket, asio::buffer(bytes)); }

std::string HttpClient::read_until(const std::string& marker) {
  asio::read_until(connection_->socket, asio::dynamic_buffer(connection_->raw), marker);
  return connection_->raw;
}

HttpReply HttpClient::read_reply() {
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(connection_->socket, connection_->buffer, parser);
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

void HttpClient::close() {
  boost::system::error_code ignored;
  connection_->socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  connection_->socket.close(ignored);
}

bool HttpClient::server_closed() {
  boost::system::error_code ec;
  char byte;
  connection_->socket.read_some(asio::buffer(&byte, 1), ec);
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

}  // namespace tandem::test_support
