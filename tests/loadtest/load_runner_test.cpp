// parse_url, and run_load against a live in-process server of the tiny pair:
// closed and open loops, the time bound, and failures (400, no server,
// request timeout) recorded rather than thrown.
#include "tools/loadtest/load_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <random>

#include "common/error.h"
#include "tests/server/test_server.h"

namespace tandem::loadtest {
namespace {

using nlohmann::json;
using test_support::TestServer;

// ---- parse_url ----

TEST(ParseUrl, HostPortAndPath) {
  const Endpoint endpoint = parse_url("http://127.0.0.1:8080/v1/completions");
  EXPECT_EQ(endpoint.host, "127.0.0.1");
  EXPECT_EQ(endpoint.port, 8080);
  EXPECT_EQ(endpoint.path, "/v1/completions");

  const Endpoint other = parse_url("http://example.org/openai/v1/completions");
  EXPECT_EQ(other.host, "example.org");
  EXPECT_EQ(other.port, 80);  // no port: HTTP's
  EXPECT_EQ(other.path, "/openai/v1/completions");
}

TEST(ParseUrl, NoPathMeansCompletionsAndIpv6HostsWork) {
  EXPECT_EQ(parse_url("http://localhost:9000").path, "/v1/completions");
  EXPECT_EQ(parse_url("http://localhost:9000/").path, "/v1/completions");
  const Endpoint v6 = parse_url("http://[::1]:8000/v1/completions");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 8000);
  // The Host header brackets it again, as servers that check Host expect.
  EXPECT_EQ(host_header(v6), "[::1]:8000");
  EXPECT_EQ(host_header(parse_url("http://localhost:9000")), "localhost:9000");
}

TEST(ParseUrl, HttpsIsRefusedNamingTheUrl) {
  const std::string url = "https://api.example.com/v1/completions";
  try {
    parse_url(url);
    FAIL() << "https was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(error.what()).find(url), std::string::npos) << error.what();
  }
}

TEST(ParseUrl, MalformedUrlsAreInvalid) {
  for (const std::string url : {"127.0.0.1:8080", "ftp://host/x", "http://", "http://:80/x",
                                "http://host:/x", "http://host:99999/x", "http://host:8o/x",
                                "http://[::1/x"}) {
    try {
      parse_url(url);
      ADD_FAILURE() << url << " was accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << url;
      EXPECT_NE(std::string(error.what()).find(url), std::string::npos) << error.what();
    }
  }
}

TEST(RunLoad, ShapeWithoutABoundIsRefused) {
  LoadShape shape;
  double duration = 0;
  EXPECT_THROW(run_load(parse_url("http://127.0.0.1:1/v1/completions"), {"{}"}, shape, {}, duration),
               Error);
}

// ---- against a live server ----

// One server for every live test: starting one loads and calibrates models.
class LiveServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<TestServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  static Endpoint endpoint() {
    return parse_url("http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/completions");
  }

  static std::unique_ptr<TestServer> server_;
};
std::unique_ptr<TestServer> LiveServer::server_;

const std::vector<std::string> kPrompts = {"The history of the city", "In the morning, the",
                                           "She said that", "Scientists have found"};

// Seeded sampled requests with a fixed γ, so their text replays exactly.
std::vector<json> sampled_bodies(int max_tokens) {
  std::vector<json> bodies;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    bodies.push_back({{"prompt", kPrompts[i]}, {"max_tokens", max_tokens}, {"ignore_eos", true},
                      {"temperature", 0.8}, {"seed", 100 + static_cast<int>(i)},
                      {"speculation", {{"gamma", 4}}}});
  }
  return bodies;
}

std::vector<std::string> dumped(const std::vector<json>& bodies) {
  std::vector<std::string> out;
  for (const json& body : bodies) out.push_back(body.dump());
  return out;
}

// The most requests in flight at once, from their [start, start + latency].
size_t most_in_flight(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end); ends sort first
  for (const RequestRecord& record : records) {
    edges.emplace_back(record.start, +1);
    edges.emplace_back(record.start + record.latency, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0, most = 0;
  for (const auto& [time, step] : edges) most = std::max(most, now += step);
  return static_cast<size_t>(most);
}

TEST_F(LiveServer, ClosedLoopStreamsWhatAWholeResponseSays) {
  const std::vector<json> bodies = sampled_bodies(16);
  std::vector<std::string> expected_text;
  for (const json& body : bodies)
    expected_text.push_back(server_->complete(body)["choices"][0]["text"].get<std::string>());

  LoadShape shape;
  shape.kind = LoadShape::closed_loop;
  shape.concurrency = 4;
  shape.max_requests = 12;
  std::vector<std::pair<size_t, size_t>> progress;
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(
      endpoint(), dumped(bodies), shape,
      [&](size_t done, size_t total) { progress.emplace_back(done, total); }, duration);

  ASSERT_EQ(records.size(), 12u);
  size_t gaps = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord& record = records[i];
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_TRUE(record.ok) << record.error;
    EXPECT_EQ(record.status, 200);
    EXPECT_EQ(record.output_tokens, 16);
    EXPECT_GT(record.prompt_tokens, 0);
    EXPECT_EQ(record.text, expected_text[i % bodies.size()]);  // bodies are used in order, cycling
    EXPECT_GT(record.ttft, 0);
    EXPECT_LE(record.ttft, record.latency);
    // One gap between successive text events: at least one event, at most one per token.
    EXPECT_LE(record.itl.size() + 1, 16u);
    double streamed = record.ttft;
    for (double gap : record.itl) {
      EXPECT_GE(gap, 0);
      streamed += gap;
    }
    EXPECT_LE(streamed, record.latency + 1e-9);
    gaps += record.itl.size();
    EXPECT_GE(record.start, 0);
    EXPECT_LE(record.start + record.latency, duration + 1e-6);
  }
  EXPECT_GT(gaps, 0u);  // the text came in pieces as it was generated, not in one
  for (size_t i = 1; i < records.size(); ++i) EXPECT_LE(records[i - 1].start, records[i].start);
  EXPECT_EQ(most_in_flight(records), 4u);  // the first four go out together; never a fifth
  ASSERT_EQ(progress.size(), 12u);
  EXPECT_EQ(progress.back(), (std::pair<size_t, size_t>{12, 12}));
}

TEST_F(LiveServer, OpenLoopSendsOnTheSeededGammaSchedule) {
  LoadShape shape;
  shape.kind = LoadShape::open_loop;
  shape.request_rate = 40;
  shape.burstiness = 1.0;  // Poisson
  shape.concurrency = 0;
  shape.max_requests = 10;
  shape.seed = 5;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(endpoint(), dumped(sampled_bodies(8)), shape, {}, duration);
  ASSERT_EQ(records.size(), 10u);

  // The arrival times the shape promises: gaps of mean 1/rate from the seed.
  std::mt19937_64 rng(shape.seed);
  std::gamma_distribution<double> gap(1.0, 1.0 / 40);
  double arrival = 0;
  for (const RequestRecord& record : records) {
    EXPECT_TRUE(record.ok) << record.error;
    EXPECT_GE(record.start, arrival - 1e-6);  // never early
    EXPECT_LE(record.start, arrival + 0.2);   // and not held back
    arrival += gap(rng);
  }
  EXPECT_GE(duration, records.back().start);
}

TEST_F(LiveServer, OpenLoopCapHoldsArrivalsBack) {
  LoadShape shape;
  shape.kind = LoadShape::open_loop;
  shape.request_rate = std::numeric_limits<double>::infinity();  // all at once...
  shape.concurrency = 2;                                         // ...but two at a time
  shape.max_requests = 6;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(endpoint(), dumped(sampled_bodies(8)), shape, {}, duration);
  ASSERT_EQ(records.size(), 6u);
  for (const RequestRecord& record : records) EXPECT_TRUE(record.ok) << record.error;
  EXPECT_EQ(most_in_flight(records), 2u);
}

TEST_F(LiveServer, TimeBoundCancelsWhatIsInFlight) {
  json body = {{"prompt", "It was a long"}, {"max_tokens", 200}, {"ignore_eos", true},
               {"temperature", 0}};
  LoadShape shape;
  shape.kind = LoadShape::closed_loop;
  shape.concurrency = 4;
  shape.max_seconds = 0.5;
  double duration = 0;
  const auto began = std::chrono::steady_clock::now();
  const std::vector<RequestRecord> records = run_load(endpoint(), {body.dump()}, shape, {}, duration);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

  EXPECT_LT(wall, 1.5);
  EXPECT_GE(duration, 0.5);
  EXPECT_LT(duration, 0.75);
  ASSERT_GE(records.size(), 4u);
  size_t cancelled = 0;
  for (const RequestRecord& record : records) {
    EXPECT_LT(record.start, 0.5);  // nothing is sent after the bound
    if (record.ok) continue;
    EXPECT_EQ(record.error, kCancelledAtEnd);
    EXPECT_NEAR(record.start + record.latency, 0.5, 0.2);
    ++cancelled;
  }
  // A closed loop has `concurrency` requests in flight when time runs out
  // (one fewer if the bound falls between an end and its replacement).
  EXPECT_GE(cancelled, 3u);
  EXPECT_LE(cancelled, 4u);
}

TEST_F(LiveServer, CompleteOnceStreamsOneRequest) {
  const json body = {{"prompt", "The old man"}, {"max_tokens", 10}, {"temperature", 0}};
  const std::string whole = server_->complete(body)["choices"][0]["text"].get<std::string>();
  const RequestRecord record = complete_once(endpoint(), streaming_body(body.dump()));
  ASSERT_TRUE(record.ok) << record.error;
  EXPECT_EQ(record.text, whole);
  EXPECT_GT(record.output_tokens, 0);
  EXPECT_LE(record.output_tokens, 10);
}

TEST_F(LiveServer, BadBodyGetsTheServersStatusAndMessage) {
  const json body = {{"prompt", "Hello"}, {"max_tokens", -3}};
  const std::string server_says =
      server_->complete(body, 400)["error"]["message"].get<std::string>();
  LoadShape shape;
  shape.max_requests = 2;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(endpoint(), {body.dump(), "{not json"}, shape, {}, duration);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].ok);
  EXPECT_EQ(records[0].status, 400);
  EXPECT_EQ(records[0].error, server_says);
  EXPECT_FALSE(records[1].ok);  // sent as it is: the server's 400 is the record
  EXPECT_EQ(records[1].status, 400);
  EXPECT_FALSE(records[1].error.empty());
}

TEST_F(LiveServer, RequestTimeoutEndsASlowRequest) {
  json body = {{"prompt", "It was a long"}, {"max_tokens", 200}, {"ignore_eos", true},
               {"temperature", 0}};
  LoadShape shape;
  shape.max_requests = 1;
  shape.request_timeout_seconds = 0.02;
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(endpoint(), {body.dump()}, shape, {}, duration);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].ok);
  EXPECT_NE(records[0].error.find("timeout"), std::string::npos) << records[0].error;
  EXPECT_LT(records[0].latency, 0.5);
}

TEST(RunLoad, NoServerGivesStatusZero) {
  // A port that was free a moment ago: nothing listens there.
  boost::asio::io_context context;
  boost::asio::ip::tcp::acceptor acceptor(
      context, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const int port = acceptor.local_endpoint().port();
  acceptor.close();

  LoadShape shape;
  shape.concurrency = 2;
  shape.max_requests = 3;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(parse_url("http://127.0.0.1:" + std::to_string(port) + "/v1/completions"),
               {R"({"prompt": "x"})"}, shape, {}, duration);
  ASSERT_EQ(records.size(), 3u);
  for (const RequestRecord& record : records) {
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.status, 0);
    EXPECT_NE(record.error.find("connect"), std::string::npos) << record.error;
  }
  EXPECT_LT(duration, 1.0);
}

}  // namespace
}  // namespace tandem::loadtest
