// What a request must satisfy before a route runs (coordinator/server/
// request_gate.h): its pure parts, then over real HTTP the Host header, a
// browser's Origin and CORS preflights, the API key's scheme in any case, a
// JSON Content-Type, the order of those checks, and bodies with duplicate
// keys or bytes after the JSON value.
#include "coordinator/server/request_gate.h"

#include <gtest/gtest.h>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using namespace std::string_literals;
using nlohmann::json;
using test_support::HttpClient;
using test_support::HttpReply;
using test_support::TestServer;
using test_support::TinyDeployment;

const std::string kBody = R"({"prompt": "hi", "max_tokens": 2})";
const std::map<std::string, std::string> kPlainText = {{"Content-Type", "text/plain"}};

std::string message_of(const HttpReply& reply) {
  return json::parse(reply.body)["error"]["message"].get<std::string>();
}

// A POST of `body` written by hand, headers and all, so that none is added.
HttpReply raw_post(int port, const std::string& headers, const std::string& body) {
  HttpClient http(port);
  http.write_raw("POST /v1/completions HTTP/1.1\r\n" + headers + "Content-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body);
  return http.read_reply();
}

TEST(RequestGate, BearerSchemeInAnyCase) {
  EXPECT_EQ(gate::bearer_token("Bearer k-1"), "k-1");
  EXPECT_EQ(gate::bearer_token("bearer k-1"), "k-1");
  EXPECT_EQ(gate::bearer_token("BEARER k-1"), "k-1");
  EXPECT_EQ(gate::bearer_token("Bearer \t  k-1  "), "k-1");
  EXPECT_EQ(gate::bearer_token("Bearerk-1"), std::nullopt);
  EXPECT_EQ(gate::bearer_token("Bearer "), std::nullopt);
  EXPECT_EQ(gate::bearer_token("Basic k-1"), std::nullopt);
  EXPECT_EQ(gate::bearer_token(""), std::nullopt);
  EXPECT_TRUE(gate::same_secret("abc", "abc"));
  EXPECT_FALSE(gate::same_secret("abd", "abc"));
  EXPECT_FALSE(gate::same_secret("ab", "abc"));
}

TEST(RequestGate, JsonMediaTypeWithParametersAndAnyCase) {
  EXPECT_TRUE(gate::is_json_media_type("application/json"));
  EXPECT_TRUE(gate::is_json_media_type("Application/JSON"));
  EXPECT_TRUE(gate::is_json_media_type("application/json; charset=utf-8"));
  EXPECT_TRUE(gate::is_json_media_type("application/json;charset=UTF-8"));
  EXPECT_FALSE(gate::is_json_media_type(""));
  EXPECT_FALSE(gate::is_json_media_type("text/plain"));
  EXPECT_FALSE(gate::is_json_media_type("text/plain; x=application/json"));
  EXPECT_FALSE(gate::is_json_media_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(gate::is_json_media_type("multipart/form-data; boundary=x"));
  EXPECT_FALSE(gate::is_json_media_type("application/jsonx"));
}

TEST(RequestGateHttp, PostBodiesMustBeDeclaredJson) {
  TestServer server;
  HttpClient http(server.port());
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"}) {
    for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
      const HttpReply reply = http.post_json(route, kBody, {{"Content-Type", type}});
      ASSERT_EQ(reply.status, 415) << type << " " << route << ": " << reply.body;
      EXPECT_NE(message_of(reply).find("Content-Type: application/json"), std::string::npos) << reply.body;
      EXPECT_NE(message_of(reply).find(type), std::string::npos) << reply.body;
      EXPECT_EQ(json::parse(reply.body)["error"]["code"], "unsupported_media_type");
    }
  }
  const HttpReply missing = raw_post(server.port(), "Host: 127.0.0.1\r\n", kBody);
  EXPECT_EQ(missing.status, 415);
  EXPECT_NE(message_of(missing).find("no Content-Type"), std::string::npos) << missing.body;
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);  // none reached the engine

  const HttpReply json_in_capitals =
      http.post_json("/v1/completions", kBody, {{"Content-Type", "Application/JSON; charset=utf-8"}});
  EXPECT_EQ(json_in_capitals.status, 200) << json_in_capitals.body;
  // Routes without a body do not care.
  for (const char* route : {"/health", "/ready", "/metrics", "/v1/models"})
    EXPECT_EQ(http.send("GET", route, "", kPlainText).status, 200) << route;
}

TEST(RequestGateHttp, TheHostHeaderMustNameThisServer) {
  TestServer server;
  const std::string port = std::to_string(server.port());
  HttpClient http(server.port());
  for (const std::string& host : std::vector<std::string>{"localhost:" + port, "LOCALHOST", "127.0.0.1:" + port, "[::1]:" + port})
    EXPECT_EQ(http.send("GET", "/v1/models", "", {{"Host", host}}).status, 200) << host;
  // A page whose DNS name was rebound to 127.0.0.1 sends its own name.
  for (const char* route : {"/v1/completions", "/v1/models", "/metrics"}) {
    const HttpReply reply =
        http.send(route == std::string("/v1/completions") ? "POST" : "GET", route, kBody,
                  {{"Host", "attacker.example:" + port}});
    ASSERT_EQ(reply.status, 403) << route << ": " << reply.body;
    EXPECT_NE(message_of(reply).find("Host header, \"attacker.example:" + port), std::string::npos) << reply.body;
    EXPECT_NE(message_of(reply).find("server.allowed_hosts"), std::string::npos) << reply.body;
  }
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);
  EXPECT_EQ(raw_post(server.port(), "Content-Type: application/json\r\n", kBody).status, 400);  // no Host

  TinyDeployment named;
  named.server = "  allowed_hosts: [tandem.example]\n";
  TestServer listed(named);
  HttpClient to_listed(listed.port());
  EXPECT_EQ(to_listed.send("GET", "/v1/models", "", {{"Host", "Tandem.Example:1"}}).status, 200);
  EXPECT_EQ(to_listed.send("GET", "/v1/models", "", {{"Host", "localhost"}}).status, 403);

  TinyDeployment any;
  any.server = "  allowed_hosts: [\"*\"]\n";
  TestServer open(any);
  EXPECT_EQ(HttpClient(open.port()).post_json("/v1/completions", kBody, {{"Host", "whatever.example"}}).status, 200);
}

TEST(RequestGateHttp, OtherOriginsAreRefusedUnlessListed) {
  TestServer server;
  const std::string own = "http://127.0.0.1:" + std::to_string(server.port());
  HttpClient http(server.port());
  const HttpReply foreign = http.post_json("/v1/completions", kBody, {{"Origin", "http://attacker.example"}});
  ASSERT_EQ(foreign.status, 403) << foreign.body;
  EXPECT_NE(message_of(foreign).find("Origin \"http://attacker.example\""), std::string::npos) << foreign.body;
  EXPECT_NE(message_of(foreign).find("server.cors_origins"), std::string::npos) << foreign.body;
  EXPECT_EQ(http.send("OPTIONS", "/v1/completions", "", {{"Origin", "http://attacker.example"}}).status, 403);
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);
  // The server's own pages (same origin) need nothing listed, nor CORS headers.
  const HttpReply same = http.post_json("/v1/completions", kBody,
                                        {{"Origin", own}, {"Host", "127.0.0.1:" + std::to_string(server.port())}});
  EXPECT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(same.header("access-control-allow-origin"), "");
}

TEST(RequestGateHttp, AListedOriginGetsCorsHeadersAndPreflights) {
  ::setenv("TANDEM_TEST_GATE_KEY", "k-42", 1);
  TinyDeployment deployment;
  deployment.server = "  api_key_env: TANDEM_TEST_GATE_KEY\n  cors_origins: [\"http://localhost:3000\"]\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const std::string ui = "http://localhost:3000";

  // The preflight carries no key; its answer says what the page may send.
  const HttpReply preflight = http.send("OPTIONS", "/v1/chat/completions", "",
                                        {{"Origin", ui}, {"Access-Control-Request-Method", "POST"},
                                         {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}});
  ASSERT_EQ(preflight.status, 204) << preflight.body;
  EXPECT_EQ(preflight.header("access-control-allow-origin"), ui);
  EXPECT_EQ(preflight.header("vary"), "Origin");
  EXPECT_EQ(preflight.header("access-control-allow-methods"), "POST, OPTIONS");
  const std::string allowed_headers = preflight.header("access-control-allow-headers");
  for (const char* name : {"Authorization", "Content-Type", "x-stainless-os"})
    EXPECT_NE(allowed_headers.find(name), std::string::npos) << allowed_headers;
  EXPECT_EQ(preflight.header("access-control-max-age"), "600");

  const std::map<std::string, std::string> from_ui = {{"Origin", ui}, {"Authorization", "Bearer k-42"}};
  const HttpReply whole = http.post_json("/v1/completions", kBody, from_ui);
  EXPECT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.header("access-control-allow-origin"), ui);
  const HttpReply stream = http.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": 2, "stream": true})", from_ui);
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("content-type"), "text/event-stream");
  EXPECT_EQ(stream.header("access-control-allow-origin"), ui);
  // Errors too, so that the page can read why.
  const HttpReply unauthorized = http.post_json("/v1/completions", kBody, {{"Origin", ui}});
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.header("access-control-allow-origin"), ui);
  EXPECT_EQ(http.post_json("/v1/completions", kBody, {{"Origin", "http://localhost:3001"}}).status, 403);
}

TEST(RequestGateHttp, TheBearerSchemeIsCaseInsensitive) {
  ::setenv("TANDEM_TEST_GATE_KEY", "k-42", 1);
  TinyDeployment deployment;
  deployment.server = "  api_key_env: TANDEM_TEST_GATE_KEY\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  for (const char* value : {"Bearer k-42", "bearer k-42", "BEARER k-42", "bEaReR   k-42"})
    EXPECT_EQ(http.post_json("/v1/completions", kBody, {{"Authorization", value}}).status, 200) << value;
  for (const char* value : {"Basic k-42", "Bearerk-42", "bearer k-4", "bearer"})
    EXPECT_EQ(http.post_json("/v1/completions", kBody, {{"Authorization", value}}).status, 401) << value;
}

TEST(RequestGateHttp, ChecksComeInOrder) {
  ::setenv("TANDEM_TEST_GATE_KEY", "k-42", 1);
  TinyDeployment deployment;
  deployment.server = "  api_key_env: TANDEM_TEST_GATE_KEY\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  std::map<std::string, std::string> headers = {{"Host", "attacker.example"}, {"Content-Type", "text/plain"}};
  EXPECT_EQ(http.post_json("/v1/nothing", kBody, headers).status, 403);  // Host first
  headers.erase("Host");
  EXPECT_EQ(http.post_json("/v1/nothing", kBody, headers).status, 404);
  const HttpReply wrong_method = http.send("GET", "/v1/completions", "", headers);
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.header("allow"), "POST, OPTIONS");
  EXPECT_EQ(http.post_json("/v1/completions", kBody, headers).status, 401);  // the key before the type
  headers["Authorization"] = "Bearer k-42";
  EXPECT_EQ(http.post_json("/v1/completions", kBody, headers).status, 415);
  headers["Content-Type"] = "application/json";
  EXPECT_EQ(http.post_json("/v1/completions", kBody, headers).status, 200);
  EXPECT_EQ(http.send("OPTIONS", "/v1/completions").header("allow"), "POST, OPTIONS");
}

TEST(RequestGateHttp, DuplicateKeysAndBytesAfterTheJsonGet400) {
  TestServer server;
  HttpClient http(server.port());
  const HttpReply duplicate = http.post_json("/v1/completions", R"({"prompt": "hi", "max_tokens": 2, "max_tokens": 200})");
  ASSERT_EQ(duplicate.status, 400) << duplicate.body;
  EXPECT_EQ(json::parse(duplicate.body)["error"]["param"], "max_tokens");
  const HttpReply chat = http.post_json(
      "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi", "role": "system"}], "max_tokens": 2})");
  ASSERT_EQ(chat.status, 400) << chat.body;
  EXPECT_EQ(json::parse(chat.body)["error"]["param"], "messages[0].role");
  const HttpReply nul = http.post_json("/v1/completions", kBody + "\0garbage"s);
  ASSERT_EQ(nul.status, 400) << nul.body;
  EXPECT_NE(message_of(nul).find("after its JSON value"), std::string::npos) << nul.body;
  EXPECT_EQ(http.post_json("/v1/completions", kBody + " {}").status, 400);
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), 0);
}

}  // namespace
}  // namespace tandem
