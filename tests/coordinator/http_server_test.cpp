// Tests of coordinator/http/http_server.*: the connection limits that keep one
// client from starving the rest (accept errors back off, max_connections,
// idle and read timeouts answered 408) and the transfer codings it refuses.
// The server here answers every request with its body's length, no models.
// Tests that lower RLIMIT_NOFILE restore it; ctest runs each case in its own
// process anyway.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "coordinator/http/accept_backoff.h"
#include "coordinator/http/fd_budget.h"
#include "coordinator/http/http_server.h"
#include "tests/support/raw_socket.h"

namespace tandem::http {
namespace {

using namespace std::chrono_literals;
using test_support::last_final_status;
using test_support::raw_post;
using test_support::RawSocket;

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// An HttpServer on a free loopback port whose handler answers
// {"bytes": <body length>}; its log goes to log().
class EchoServer {
 public:
  explicit EchoServer(HttpOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.log = &log_;
    // Lines from both HTTP threads would race on the ostringstream; the
    // request log has its own tests (tests/server/request_log_test.cpp).
    options.log_requests = false;
    options.on_refused_connection = [this] { ++refused_; };
    server_ = std::make_unique<HttpServer>(options, [](Exchange& exchange) -> asio::awaitable<void> {
      co_await exchange.respond(make_response(
          exchange.request(), bhttp::status::ok,
          "{\"bytes\": " + std::to_string(exchange.request().body().size()) + "}"));
    });
    server_->start();
  }
  ~EchoServer() { server_->stop(); }
  HttpServer& operator*() { return *server_; }
  HttpServer* operator->() { return server_.get(); }
  int port() const { return server_->port(); }
  std::string log() const { return log_.str(); }  // read after stop()
  int refused() const { return refused_.load(); }

 private:
  std::ostringstream log_;
  std::atomic<int> refused_{0};
  std::unique_ptr<HttpServer> server_;
};

int open_descriptors() {
  return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                        std::filesystem::directory_iterator()));
}

// Lowers this process's open-file limit to `extra` above the descriptors open
// now, and restores it when destroyed.
class FileLimit {
 public:
  explicit FileLimit(int extra) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lower = saved_;
    lower.rlim_cur = static_cast<rlim_t>(open_descriptors() + extra);
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &lower), 0);
  }
  ~FileLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

// CPU seconds (user + system) this process has used.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

size_t count(const std::string& text, const std::string& piece) {
  size_t found = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++found;
  return found;
}

TEST(AcceptBackoff, DoublesUpToOneSecondAndStartsOverAfterASuccess) {
  AcceptBackoff backoff;
  std::vector<long> waits;
  for (int i = 0; i < 9; ++i) {
    waits.push_back(static_cast<long>(backoff.failed().count()));
    EXPECT_EQ(backoff.first_of_run(), i == 0);
  }
  EXPECT_EQ(waits, (std::vector<long>{10, 20, 40, 80, 160, 320, 640, 1000, 1000}));
  EXPECT_EQ(backoff.succeeded(), 9);
  EXPECT_EQ(backoff.succeeded(), 0);
  EXPECT_EQ(backoff.failed().count(), 10);
  EXPECT_TRUE(backoff.first_of_run());
}

TEST(HttpServer, AcceptErrorsBackOffInsteadOfSpinning) {
#ifdef __SANITIZE_ADDRESS__  // make test-sanitize
  // UBSan's vptr check probes whether memory is readable through a pipe();
  // with every descriptor taken that fails, and it reports live Asio objects
  // as "invalid vptr" (seen on timer queues, strands, shared_ptr blocks).
  GTEST_SKIP() << "takes every file descriptor, which the sanitizer runtime needs";
#endif
  EchoServer server;
  FileLimit limit(16);
  // Every descriptor is taken but one, which the client's socket takes: the
  // server's accept() then fails (EMFILE).
  std::vector<int> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ::close(filler.back());
  filler.pop_back();
  RawSocket client(server.port());
  client.send(kHealth);

  const double cpu_before = cpu_seconds();
  std::this_thread::sleep_for(1500ms);
  const double cpu_used = cpu_seconds() - cpu_before;
  EXPECT_LT(cpu_used, 0.15) << "the accept loop spins on EMFILE";
  RecordProperty("cpu_seconds_during_exhaustion", std::to_string(cpu_used));

  for (int fd : filler) ::close(fd);
  // The wait between tries is at most 1 s: the client is served soon after.
  EXPECT_TRUE(client.read_until("\r\n\r\n", 3s));
  EXPECT_EQ(last_final_status(client.received()), 200);
  server->stop();
  EXPECT_EQ(count(server.log(), "accepting a connection failed (Too many open files)"), 1u)
      << server.log();
  EXPECT_EQ(count(server.log(), "accepting connections again"), 1u) << server.log();
}

TEST(HttpServer, HoardedIdleConnectionsCannotLockOutHealthBelowTheFileLimit) {
  FileLimit limit(100);  // this process holds both ends of each connection
  HttpOptions options;
  options.max_connections = 1000;
  EchoServer server(options);
  // What the limit leaves, less the descriptors kept spare.
  EXPECT_LE(server->max_connections(), 100 - kSpareDescriptors);
  EXPECT_GT(server->max_connections(), 10);

  const double cpu_before = cpu_seconds();
  std::vector<std::unique_ptr<RawSocket>> hoarders;
  for (int i = 0; i < 50; ++i) hoarders.push_back(std::make_unique<RawSocket>(server.port()));
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(server->open_connections(), server->max_connections() + 1);

  RawSocket health(server.port());
  health.send(kHealth);
  ASSERT_TRUE(health.read_until("\r\n\r\n", 3s)) << "GET /health got no answer";
  EXPECT_EQ(last_final_status(health.received()), 200);
  EXPECT_LT(cpu_seconds() - cpu_before, 1.0);
  server->stop();
  EXPECT_NE(server.log().find("warning: server.max_connections = 1000 is more than the open-file "
                              "limit (ulimit -n) leaves room for"),
            std::string::npos)
      << server.log();
}

TEST(HttpServer, ConnectionsBeyondTheLimitWithNoneIdleGet503) {
  HttpOptions options;
  options.max_connections = 2;
  EchoServer server(options);
  // Two connections in the middle of a request: busy, not to be evicted.
  RawSocket first(server.port()), second(server.port());
  first.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12");
  second.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12");
  std::this_thread::sleep_for(200ms);

  RawSocket third(server.port());
  third.send(kHealth);
  ASSERT_TRUE(third.read_to_end(3s));
  const std::string& reply = third.received();
  EXPECT_EQ(last_final_status(reply), 503) << reply;
  EXPECT_NE(reply.find("Retry-After: 1"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  EXPECT_NE(reply.find("server.max_connections = 2"), std::string::npos) << reply;
  EXPECT_EQ(server.refused(), 1);

  // Once one finishes, a new connection is served again.
  first.send("3456789012");
  ASSERT_TRUE(first.read_until("\"bytes\": 10}", 3s)) << first.received();
  first.close();
  for (int i = 0; i < 100 && server->open_connections() >= 2; ++i) std::this_thread::sleep_for(10ms);
  RawSocket fourth(server.port());
  fourth.send(kHealth);
  ASSERT_TRUE(fourth.read_until("\r\n\r\n", 3s));
  EXPECT_EQ(last_final_status(fourth.received()), 200);
}

TEST(HttpServer, IdleKeepAliveConnectionsCloseAfterTheIdleTimeout) {
  HttpOptions options;
  options.idle_timeout = 300ms;
  EchoServer server(options);
  RawSocket client(server.port());
  client.send(kHealth);
  ASSERT_TRUE(client.read_until("{\"bytes\": 0}", 3s));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.read_to_end(3s)) << "the idle connection stayed open";
  const auto idle = std::chrono::steady_clock::now() - start;
  EXPECT_GE(idle, 250ms);
  EXPECT_LT(idle, 2s);
}

TEST(HttpServer, ShortBodiesAndSlowHeadersGet408) {
  HttpOptions options;
  options.request_read_timeout = 300ms;
  EchoServer server(options);
  RawSocket short_body(server.port());
  short_body.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{\"a\": 1}");
  RawSocket slow_header(server.port());
  slow_header.send("GET /health HTTP/1.1\r\nHost: a\r\n");  // never the blank line
  for (RawSocket* client : {&short_body, &slow_header}) {
    ASSERT_TRUE(client->read_to_end(3s)) << "no answer, no close";
    const std::string& reply = client->received();
    EXPECT_EQ(last_final_status(reply), 408) << reply;
    EXPECT_NE(reply.find("server.request_read_timeout_seconds = 0.3 s"), std::string::npos) << reply;
    EXPECT_NE(reply.find("application/json"), std::string::npos) << reply;
    EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  }
}

TEST(HttpServer, UnsupportedTransferCodingsGet501AndTeIsIgnored) {
  EchoServer server;
  const std::string body = "{\"prompt\": \"hi\"}";
  for (const std::string coding : {"gzip", "gzip, chunked"}) {
    RawSocket client(server.port());
    client.send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: " + coding +
                "\r\n\r\n10\r\n" + body + "\r\n0\r\n\r\n");
    ASSERT_TRUE(client.read_to_end(3s));
    const std::string& reply = client.received();
    EXPECT_EQ(last_final_status(reply), 501) << reply;
    EXPECT_NE(reply.find("Transfer-Encoding: " + coding +
                         " is not supported; send the body as it is, with Content-Length or "
                         "Transfer-Encoding: chunked"),
              std::string::npos)
        << reply;
  }
  // TE says what the client accepts in a response: no reason to refuse.
  RawSocket client(server.port());
  client.send("POST /x HTTP/1.1\r\nHost: a\r\nTE: gzip\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(client.read_until("}", 3s));
  EXPECT_EQ(last_final_status(client.received()), 200) << client.received();
  EXPECT_NE(client.received().find("{\"bytes\": 16}"), std::string::npos);
}

}  // namespace
}  // namespace tandem::http
