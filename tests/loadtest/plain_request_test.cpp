// Tests of tools/loadtest/plain_request.h against a loopback fake
// (tests/support/fake_http_server.h): the whole answer comes back, the
// request carries its method, body and Content-Type, and a server that is
// slow or absent gives status 0 with the reason, within the timeout.
#include "tools/loadtest/plain_request.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <mutex>

#include "tests/support/fake_http_server.h"

namespace tandem::loadtest {
namespace {

using test_support::FakeAnswer;
using test_support::FakeServer;

Endpoint endpoint_of(int port) {
  Endpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = port;
  return endpoint;
}

TEST(PlainRequest, ReturnsTheWholeAnswerAndSendsTheRequestAsGiven) {
  std::mutex mutex;
  std::string seen;
  FakeServer server([&](const std::string& method, const std::string& path, const std::string& body) {
    std::lock_guard lock(mutex);
    seen = method + " " + path + " " + body;
    return FakeAnswer{405, R"({"error":{"message":"wrong method"}})"};
  });
  const PlainResponse response =
      plain_request(endpoint_of(server.port()), {"DELETE", "/v1/completions", R"({"a":1})"}, std::chrono::seconds(5));
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.body, R"({"error":{"message":"wrong method"}})");
  EXPECT_TRUE(response.error.empty());
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen, R"(DELETE /v1/completions {"a":1})");
}

TEST(PlainRequest, ASlowServerTimesOut) {
  FakeServer server([](const std::string&, const std::string&, const std::string&) {
    return FakeAnswer{200, "late", "text/plain", std::chrono::milliseconds(1500)};
  });
  const PlainResponse response =
      plain_request(endpoint_of(server.port()), {"GET", "/health", ""}, std::chrono::milliseconds(300));
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.error.find("no answer within the timeout"), std::string::npos) << response.error;
  EXPECT_GE(response.seconds, 0.29);
  EXPECT_LT(response.seconds, 1.4);
}

TEST(PlainRequest, NoServerIsStatusZeroWithTheReason) {
  int port = 0;
  {  // a port that was free a moment ago and has no listener now
    boost::asio::io_context context;
    boost::asio::ip::tcp::acceptor acceptor(context, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  const PlainResponse response = plain_request(endpoint_of(port), {"GET", "/metrics", ""}, std::chrono::seconds(5));
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.error.find("connect"), std::string::npos) << response.error;
}

}  // namespace
}  // namespace tandem::loadtest
