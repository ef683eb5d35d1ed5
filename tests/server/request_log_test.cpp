// The request log (coordinator/http/request_log.h): one line per request
// with its status and, for a completion, its counts; a 5xx with its cause;
// never a prompt, an output, a key or a query string.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/test_server.h"
#include "tests/support/eventually.h"

namespace tandem {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using test_support::eventually;
using test_support::HttpClient;
using test_support::TestServer;
using test_support::TinyDeployment;

using Fields = std::map<std::string, std::string>;

// A text line's key=value pairs (quoted values unescaped).
Fields text_fields(const std::string& line) {
  Fields fields;
  size_t at = line.find("request time=");
  if (at == std::string::npos) return fields;
  at += std::string("request ").size();
  while (at < line.size()) {
    const size_t equals = line.find('=', at);
    if (equals == std::string::npos) break;
    const std::string key = line.substr(at, equals - at);
    std::string value;
    size_t next = equals + 1;
    if (next < line.size() && line[next] == '"') {
      for (++next; next < line.size() && line[next] != '"'; ++next) {
        if (line[next] == '\\') ++next;
        value += line[next];
      }
      ++next;
    } else {
      const size_t space = line.find(' ', next);
      value = line.substr(next, space == std::string::npos ? std::string::npos : space - next);
      next = space == std::string::npos ? line.size() : space;
    }
    fields[key] = value;
    at = next + 1;
  }
  return fields;
}

// The request log's text lines so far, parsed.
std::vector<Fields> text_requests(const TestServer& server) {
  std::vector<Fields> requests;
  std::istringstream lines(server.log_text());
  for (std::string line; std::getline(lines, line);)
    if (line.find("tandem: request time=") != std::string::npos) requests.push_back(text_fields(line));
  return requests;
}

// The request log's JSON lines so far; every line that opens with '{' must parse.
std::vector<json> json_requests(const TestServer& server) {
  std::vector<json> requests;
  std::istringstream lines(server.log_text());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    requests.push_back(json::parse(line));  // throws (and fails the test) if it does not parse
  }
  return requests;
}

template <typename Line>
std::vector<Line> with_path(const std::vector<Line>& lines, const std::string& path) {
  std::vector<Line> found;
  for (const Line& line : lines)
    if (line.at("path") == path) found.push_back(line);
  return found;
}

const std::regex kIsoTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");

TEST(RequestLog, ACompletionIsOneTextLineWithItsCountsAndNoText) {
  TestServer server;
  const std::string prompt = "Zanzibar quokka marmalade";
  const json reply = server.complete(
      {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_TRUE(eventually([&] { return !with_path(text_requests(server), "/v1/completions").empty(); }))
      << server.log_text();
  // A later request's line is there once its response is: by then any
  // second line for the completion would be too.
  HttpClient http(server.port());
  ASSERT_EQ(http.send("GET", "/health").status, 200);
  ASSERT_TRUE(eventually([&] { return !with_path(text_requests(server), "/health").empty(); }));

  const std::vector<Fields> lines = with_path(text_requests(server), "/v1/completions");
  ASSERT_EQ(lines.size(), 1u) << server.log_text();
  const Fields& line = lines[0];
  EXPECT_TRUE(std::regex_match(line.at("time"), kIsoTime)) << line.at("time");
  EXPECT_EQ(line.at("method"), "POST");
  EXPECT_EQ(line.at("status"), "200");
  EXPECT_EQ(std::stoi(line.at("prompt_tokens")), reply["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(std::stoi(line.at("completion_tokens")), 12);
  EXPECT_EQ(std::stoi(line.at("drafted_tokens")), reply["speculation"]["draft_tokens"].get<int>());
  EXPECT_EQ(std::stoi(line.at("accepted_tokens")), reply["speculation"]["accepted_tokens"].get<int>());
  EXPECT_GT(std::stoi(line.at("drafted_tokens")), 0);  // the tiny pair speculates by default
  const double ttft = std::stod(line.at("ttft_ms"));
  EXPECT_GT(ttft, 0);
  EXPECT_LE(ttft, std::stod(line.at("duration_ms")));
  EXPECT_EQ(line.count("error"), 0u);

  const std::string log = server.log_text();
  for (const char* word : {"Zanzibar", "quokka", "marmalade"})
    EXPECT_EQ(log.find(word), std::string::npos) << "prompt text in the log: " << word;
  const std::string output = reply["choices"][0]["text"];
  if (output.size() >= 8) {
    EXPECT_EQ(log.find(output), std::string::npos) << "output text in the log";
  }
}

TEST(RequestLog, JsonLinesParseAndHoldNoKeyNoQueryAndEachStatus) {
  const std::string key = "sk-log-key-7781";
  ::setenv("TANDEM_TEST_LOG_KEY", key.c_str(), 1);
  TinyDeployment deployment;
  deployment.server = "  log_format: json\n  api_key_env: TANDEM_TEST_LOG_KEY\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + key}};
  const auto ok = http.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": 5, "ignore_eos": true})", auth);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(http.post_json("/v1/completions", R"({"prompt": "hi"})",
                           {{"Authorization", "Bearer sk-wrong-5512"}}).status, 401);
  EXPECT_EQ(http.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": -3})", auth).status, 400);
  EXPECT_EQ(http.send("GET", "/health?token=querysecret77").status, 200);
  EXPECT_EQ(http.send("GET", "/nowhere").status, 404);
  ASSERT_TRUE(eventually([&] { return json_requests(server).size() >= 5; })) << server.log_text();

  const std::vector<json> lines = json_requests(server);
  ASSERT_EQ(lines.size(), 5u) << server.log_text();
  for (const json& line : lines) {
    EXPECT_TRUE(std::regex_match(line["time"].get<std::string>(), kIsoTime)) << line;
    EXPECT_TRUE(line["duration_ms"].is_number()) << line;
    EXPECT_FALSE(line.contains("error")) << line;  // no 5xx here
  }
  const std::vector<json> completions = with_path(lines, "/v1/completions");
  ASSERT_EQ(completions.size(), 3u);
  const json usage = json::parse(ok.body)["usage"];
  EXPECT_EQ(completions[0]["status"], 200);
  EXPECT_EQ(completions[0]["method"], "POST");
  EXPECT_EQ(completions[0]["prompt_tokens"], usage["prompt_tokens"]);
  EXPECT_EQ(completions[0]["completion_tokens"], 5);
  EXPECT_TRUE(completions[0]["ttft_ms"].is_number());
  EXPECT_TRUE(completions[0]["drafted_tokens"].is_number_integer());
  EXPECT_TRUE(completions[0]["accepted_tokens"].is_number_integer());
  EXPECT_EQ(completions[1]["status"], 401);
  EXPECT_EQ(completions[2]["status"], 400);
  for (const json& refused : {completions[1], completions[2]})
    EXPECT_FALSE(refused.contains("prompt_tokens")) << refused;  // never reached the engine
  ASSERT_EQ(with_path(lines, "/health").size(), 1u);  // the path, without its query
  EXPECT_EQ(with_path(lines, "/nowhere")[0]["status"], 404);

  const std::string log = server.log_text();
  for (const std::string& secret : {key, std::string("sk-wrong-5512"), std::string("querysecret77"),
                                   std::string("Bearer"), std::string("uthorization")})
    EXPECT_EQ(log.find(secret), std::string::npos) << secret;
}

TEST(RequestLog, AServerErrorIsLoggedWithItsCauseWholeOrStreamed) {
  TinyDeployment deployment;
  deployment.server = "  request_timeout_seconds: 0.01\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  // 250 tokens take far longer than 10 ms: both end at their deadline.
  const std::string body = R"({"prompt": "The", "max_tokens": 250, "temperature": 0, "ignore_eos": true)";
  EXPECT_EQ(http.post_json("/v1/completions", body + "}").status, 504);
  const auto streamed = http.post_json("/v1/completions", body + R"(, "stream": true})");
  EXPECT_EQ(streamed.status, 200);  // the error comes as an event after the 200
  EXPECT_NE(streamed.body.find("deadline"), std::string::npos) << streamed.body;
  ASSERT_TRUE(eventually([&] { return with_path(text_requests(server), "/v1/completions").size() >= 2; }))
      << server.log_text();

  const std::vector<Fields> lines = with_path(text_requests(server), "/v1/completions");
  ASSERT_EQ(lines.size(), 2u) << server.log_text();
  EXPECT_EQ(lines[0].at("status"), "504");
  EXPECT_EQ(lines[1].at("status"), "200");
  for (const Fields& line : lines) {
    ASSERT_EQ(line.count("error"), 1u) << server.log_text();
    EXPECT_EQ(line.at("error"),
              "the request ran past its deadline of server.request_timeout_seconds");
    EXPECT_LT(std::stoi(line.at("completion_tokens")), 250);
  }
}

}  // namespace
}  // namespace tandem
