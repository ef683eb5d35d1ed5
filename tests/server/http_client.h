// A small blocking HTTP/1.1 client for the server tests: one keep-alive
// connection, whole responses (chunked bodies reassembled), and a raw mode
// for reading a stream part way and hanging up. Boost.Beast stays in
// http_client.cpp, so the many test files that include this compile fast.
#pragma once

#include <map>
#include <memory>
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
  explicit HttpClient(int port);  // connects to 127.0.0.1:port
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpReply send(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::map<std::string, std::string>& headers = {});
  HttpReply post_json(const std::string& target, const std::string& body,
                      const std::map<std::string, std::string>& headers = {}) {
    return send("POST", target, body, headers);
  }

  // Raw bytes, for malformed requests and streams read part way.
  void write_raw(const std::string& bytes);
  // Reads until `marker` has arrived; returns everything read so far.
  std::string read_until(const std::string& marker);
  HttpReply read_reply();
  void close();
  // Whether the server closed the connection (a read sees end of stream).
  bool server_closed();

 private:
  struct Connection;
  std::unique_ptr<Connection> connection_;
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
