// The completion routes over connections that HTTP clients rarely make: a
// client that half-closes after a complete request still gets its response
// (a client that closes entirely is still cancelled: lifecycle_test.cpp),
// and a keep-alive connection that sends a request while the server shuts
// down gets the documented 503, never a silent close.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/server/test_server.h"
#include "tests/support/raw_socket.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;
using test_support::last_final_status;
using test_support::raw_post;
using test_support::RawSocket;
using test_support::TestServer;
using test_support::TinyDeployment;

TEST(Connections, HalfClosedClientGetsItsWholeResponse) {
  TestServer server;
  const std::string body = R"({"prompt": "The", "max_tokens": 24, "temperature": 0, "ignore_eos": true})";
  RawSocket client(server.port());
  client.send(raw_post("/v1/completions", body));
  client.shut_write();  // the request is complete; this side sends nothing more
  ASSERT_TRUE(client.read_to_end(20s));
  const std::string& reply = client.received();
  ASSERT_EQ(last_final_status(reply), 200) << reply;
  const nlohmann::json parsed = nlohmann::json::parse(reply.substr(reply.find("\r\n\r\n{") + 4));
  EXPECT_EQ(parsed["usage"]["completion_tokens"], 24);
  EXPECT_EQ(server.metric("tandem_requests_total{route=\"/v1/completions\",status=\"200\"}"), 1);
  EXPECT_EQ(server.metric("tandem_request_success_total{finished_reason=\"cancelled\"}"), 0);
  // metric() asks on a connection of its own, open while it asks.
  EXPECT_GE(server.metric("tandem_http_open_connections"), 1);
  EXPECT_EQ(server.metric("tandem_http_refused_connections_total"), 0);
}

TEST(Connections, HalfClosedClientGetsItsWholeStream) {
  TestServer server;
  const std::string body =
      R"({"prompt": "The", "max_tokens": 24, "temperature": 0, "ignore_eos": true, "stream": true})";
  RawSocket client(server.port());
  client.send(raw_post("/v1/completions", body));
  client.shut_write();
  ASSERT_TRUE(client.read_to_end(20s));
  EXPECT_EQ(last_final_status(client.received()), 200);
  EXPECT_NE(client.received().find("data: [DONE]"), std::string::npos) << client.received();
  EXPECT_EQ(server.metric("tandem_request_success_total{finished_reason=\"cancelled\"}"), 0);
}

// The client sends request after request on one keep-alive connection while
// the server shuts down: each gets a whole answer (503 once the service
// drains), the last one says Connection: close, and then the server closes. (Before, requests that
// arrived in the last moments of shutdown met a closed connection.)
TEST(Connections, KeepAliveRequestsDuringShutdownAreAnsweredThenClosed) {
  TinyDeployment deployment;
  deployment.server = "  shutdown_grace_seconds: 0.05\n";
  auto server = std::make_unique<TestServer>(deployment);
  test_support::HttpClient client(server->port());
  ASSERT_EQ(client.send("GET", "/health").status, 200);
  std::thread stopper([&] { server->shutdown(); });
  int refused = 0, last_status = 0;
  bool closed_after_answer = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    test_support::HttpReply reply;
    try {
      reply = client.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": 1})");
    } catch (const std::exception& error) {
      ADD_FAILURE() << "a request sent during shutdown got no answer: " << error.what();
      break;
    }
    ASSERT_TRUE(reply.status == 200 || reply.status == 503) << reply.status << " " << reply.body;
    if (reply.status == 503) {
      ++refused;
      EXPECT_NE(reply.body.find("shutting down"), std::string::npos) << reply.body;
    }
    last_status = reply.status;
    if (reply.header("connection") == "close") {
      closed_after_answer = client.server_closed();
      break;
    }
  }
  stopper.join();
  // The request in the engine when shutdown began may still finish (200),
  // but its answer already says Connection: close; nothing goes unanswered.
  EXPECT_TRUE(closed_after_answer);
  EXPECT_TRUE(last_status == 503 || last_status == 200) << last_status;
  RecordProperty("refused_during_shutdown", refused);
}

}  // namespace
}  // namespace tandem
