// RawSocket: a loopback TCP client at the level of bytes, for tests of what
// HTTP clients rarely do: half-close, slow or short bodies, idle hoarding.
// Every read waits at most the time it is given.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace tandem::test_support {

class RawSocket {
 public:
  explicit RawSocket(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect() to port " + std::to_string(port) + " failed");
    }
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  ~RawSocket() { close(); }

  void send(const std::string& bytes) {
    if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("send() failed");
  }
  // shutdown(SHUT_WR): no more bytes from this side; the other half still reads.
  void shut_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Everything that arrives until the server closes (true) or `wait` passes
  // (false); what arrived is in received().
  bool read_to_end(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) return false;
      char chunk[4096];
      const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return true;  // end of stream or reset
      received_.append(chunk, static_cast<size_t>(got));
    }
  }
  // Reads until `marker` has arrived (true) or `wait` passes (false).
  bool read_until(const std::string& marker, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (received_.find(marker) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd ready{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) <= 0) return false;
      char chunk[4096];
      const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return false;
      received_.append(chunk, static_cast<size_t>(got));
    }
    return true;
  }
  const std::string& received() const { return received_; }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string received_;
};

// "POST <target>" with a JSON body and Content-Length, as raw bytes.
inline std::string raw_post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The status of the last final (non-1xx) response in `bytes`; 0 if none.
inline int last_final_status(const std::string& bytes) {
  int status = 0;
  for (size_t at = bytes.find("HTTP/1.1 "); at != std::string::npos;
       at = bytes.find("HTTP/1.1 ", at + 1)) {
    const int code = std::atoi(bytes.c_str() + at + 9);
    if (code >= 200) status = code;
  }
  return status;
}

}  // namespace tandem::test_support
