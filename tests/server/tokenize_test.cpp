// POST /tokenize and /detokenize and GET /v1/models/{id} over real HTTP on
// the tiny pair: text -> ids -> text is the identity; the ids are the ones
// the completion routes feed the model (count = usage.prompt_tokens), the
// messages form's are the chat route's rendered prompt; bad bodies are 400s
// naming the field; the request gate applies as on /v1/*.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "coordinator/chat/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "tests/server/test_server.h"
#include "tests/support/tiny_models.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::kTinyTarget;
using test_support::HttpReply;
using test_support::TestServer;
using test_support::TinyDeployment;


json post(HttpClient& http, const std::string& route, const json& body, int expect_status = 200) {
  const HttpReply reply = http.post_json(route, body.dump());
  EXPECT_EQ(reply.status, expect_status) << route << " " << body.dump() << ": " << reply.body;
  return json::parse(reply.body);
}

// One server for the suite: these routes change nothing a later case could see.
class TokenizeRoute : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<TestServer>(); }
  static void TearDownTestSuite() { server_.reset(); }
  static std::unique_ptr<TestServer> server_;
};
std::unique_ptr<TestServer> TokenizeRoute::server_;

TEST_F(TokenizeRoute, ModelsRetrievesTheServedModelAndRefusesOthers) {
  TestServer& server = *server_;
  HttpClient http(server.port());
  const HttpReply list = http.send("GET", "/v1/models");
  ASSERT_EQ(list.status, 200) << list.body;
  const HttpReply one = http.send("GET", "/v1/models/tandem");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(json::parse(one.body), json::parse(list.body)["data"][0]);
  EXPECT_EQ(json::parse(one.body)["max_model_len"], 256);

  for (const char* path : {"/v1/models/gpt-4", "/v1/models/tandem2", "/v1/models/org%2Ftandem",
                           "/v1/models/tandem/extra", "/v1/models/%zz"}) {
    const HttpReply reply = http.send("GET", path);
    ASSERT_EQ(reply.status, 404) << path;
    const json error = json::parse(reply.body)["error"];
    EXPECT_EQ(error["code"], "model_not_found") << path;
    EXPECT_EQ(error["type"], "invalid_request_error") << path;
    EXPECT_NE(error["message"].get<std::string>().find("serves `tandem`"), std::string::npos);
  }
  // Percent-encoding is decoded: %74 is 't'.
  EXPECT_EQ(http.send("GET", "/v1/models/%74andem").status, 200);
  EXPECT_EQ(http.send("POST", "/v1/models/tandem", "{}").status, 405);
}

TEST_F(TokenizeRoute, TextToIdsToTextIsTheIdentity) {
  TestServer& server = *server_;
  HttpClient http(server.port());
  const Tokenizer tokenizer = Tokenizer::load(kTinyTarget);
  const std::vector<std::string> texts = {
      "The history of the city", "  leading and trailing  ", "Ünïcödé: héllo wörld",
      "日本語のテキスト", "emoji 🙂🚀 and <|endoftext|> inline", "tabs\tand\nnew lines\r\n", ""};
  for (const std::string& text : texts) {
    for (const bool special : {true, false}) {
      const json ids = post(http, "/tokenize",
                            {{"prompt", text}, {"add_special_tokens", special}, {"return_token_strs", true}});
      EXPECT_EQ(ids["tokens"].get<std::vector<int32_t>>(), tokenizer.encode(text, special)) << text;
      EXPECT_EQ(ids["count"], ids["tokens"].size());
      EXPECT_EQ(ids["max_model_len"], 256);
      ASSERT_EQ(ids["token_strs"].size(), ids["tokens"].size());
      for (size_t i = 0; i < ids["tokens"].size(); ++i)
        EXPECT_EQ(ids["token_strs"][i], tokenizer.token_text(ids["tokens"][i].get<int32_t>()));
      const json back = post(http, "/detokenize", {{"tokens", ids["tokens"]}, {"model", "tandem"}});
      EXPECT_EQ(back["prompt"], text) << "special " << special;
    }
  }
  EXPECT_FALSE(post(http, "/tokenize", {{"prompt", "hi"}}).contains("token_strs"));
  // An id in the middle of a code point decodes to U+FFFD, as in streams.
  const json half = post(http, "/tokenize", {{"prompt", "🙂"}});
  ASSERT_GT(half["count"].get<int>(), 1);
  EXPECT_EQ(post(http, "/detokenize", {{"tokens", {half["tokens"][0]}}})["prompt"], "\xEF\xBF\xBD");
}

TEST_F(TokenizeRoute, CountsWhatTheCompletionRoutesFeedTheModel) {
  TestServer& server = *server_;
  HttpClient http(server.port());
  for (const std::string prompt : {"The history of the city", "Ünïcödé 🙂 text", "a"}) {
    const json ids = post(http, "/tokenize", {{"prompt", prompt}});
    const json completion = server.complete({{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}});
    EXPECT_EQ(ids["count"], completion["usage"]["prompt_tokens"]) << prompt;
  }

  const json conversation = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "Wie geht's? 🙂"}},
        {{"role", "assistant"}, {"content", "Gut."}},
        {{"role", "user"}, {"content", [] {
           json parts = json::array();
           parts.push_back({{"type", "text"}, {"text", "part one"}});
           parts.push_back({{"type", "text"}, {"text", "part two"}});
           return parts;
         }()}}}}};
  // What the chat route renders, by the server's own template code.
  const chat::ChatTemplate chat_template = chat::ChatTemplate::load(kTinyTarget, "tandem");
  api::RequestLimits limits;
  limits.served_model_name = "tandem";
  limits.max_tokens_limit = 4096;
  for (const bool generation_prompt : {true, false}) {
    json body = conversation;
    body["add_generation_prompt"] = generation_prompt;
    const std::string rendered =
        chat_template.render(chat::parse_chat_request(body.dump(), limits));
    const json ids = post(http, "/tokenize", body);
    EXPECT_EQ(post(http, "/detokenize", {{"tokens", ids["tokens"]}})["prompt"], rendered);
    EXPECT_EQ(ids["tokens"],
              post(http, "/tokenize", {{"prompt", rendered}, {"add_special_tokens", false}})["tokens"]);
    if (generation_prompt) {
      json chat = conversation;
      chat["max_tokens"] = 1;
      chat["temperature"] = 0;
      EXPECT_EQ(ids["count"], server.chat(chat)["usage"]["prompt_tokens"]);
    }
  }
  // continue_final_message leaves the assistant's message open: no end of turn.
  json open = conversation;
  open["messages"].erase(3);
  open["continue_final_message"] = true;
  const json open_ids = post(http, "/tokenize", open);
  const std::string open_text = post(http, "/detokenize", {{"tokens", open_ids["tokens"]}})["prompt"];
  EXPECT_TRUE(open_text.ends_with("Gut.")) << open_text;
}

struct BadBody {
  std::string route;
  std::string body;
  std::string param;  // "" = null
  int status = 400;
};

TEST_F(TokenizeRoute, BadBodiesGet400NamingTheFieldAndChangeNothing) {
  TestServer& server = *server_;
  HttpClient http(server.port());
  const double prompt_tokens = server.metric("tandem_prompt_tokens_total");
  const std::vector<BadBody> cases = {
      {"/tokenize", R"({"prompt": "hi", "max_tokens": 4)", ""},
      {"/tokenize", R"(["hi"])", ""},
      {"/tokenize", R"({})", "prompt"},
      {"/tokenize", R"({"prompt": null})", "prompt"},
      {"/tokenize", R"({"prompt": 5})", "prompt"},
      {"/tokenize", R"({"prompt": [1, 2]})", "prompt"},
      {"/tokenize", R"({"prompt": "hi", "add_special_tokens": "yes"})", "add_special_tokens"},
      {"/tokenize", R"({"prompt": "hi", "return_token_strs": 1})", "return_token_strs"},
      {"/tokenize", R"({"prompt": "hi", "max_tokens": 4})", "max_tokens"},
      {"/tokenize", R"({"prompt": "hi", "add_generation_prompt": true})", "add_generation_prompt"},
      {"/tokenize", R"({"prompt": "hi", "messages": [{"role": "user", "content": "x"}]})", "messages"},
      {"/tokenize", R"({"prompt": "hi", "chat_template": "{{ 1 }}"})", "chat_template"},
      {"/tokenize", R"({"prompt": "hi", "prompt": "ho"})", "prompt"},
      {"/tokenize", R"({"prompt": "hi", "model": "gpt-4"})", "model", 404},
      {"/tokenize", R"({"messages": [{"role": "user", "content": "x"}], "model": "gpt-4"})", "model", 404},
      {"/tokenize", R"({"messages": []})", "messages"},
      {"/tokenize", R"({"messages": "hi"})", "messages"},
      {"/tokenize", R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role"},
      {"/tokenize", R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {"/tokenize", R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": 1})",
       "add_generation_prompt"},
      {"/tokenize", R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})",
       "continue_final_message"},
      {"/tokenize", R"({"messages": [{"role": "user", "content": "x"}], "temperature": 0})", "temperature"},
      {"/detokenize", R"({})", "tokens"},
      {"/detokenize", R"({"tokens": "1 2"})", "tokens"},
      {"/detokenize", R"({"tokens": [1, 4096]})", "tokens"},
      {"/detokenize", R"({"tokens": [1, -1]})", "tokens"},
      {"/detokenize", R"({"tokens": [1, 2.5]})", "tokens"},
      {"/detokenize", R"({"tokens": [1, "2"]})", "tokens"},
      {"/detokenize", R"({"tokens": [1e30]})", "tokens"},
      {"/detokenize", R"({"tokens": [1], "prompt": "x"})", "prompt"},
      {"/detokenize", R"({"tokens": [1], "model": "gpt-4"})", "model", 404},
  };
  for (const BadBody& bad : cases) {
    const HttpReply reply = http.post_json(bad.route, bad.body);
    ASSERT_EQ(reply.status, bad.status) << bad.route << " " << bad.body << ": " << reply.body;
    const json error = json::parse(reply.body)["error"];
    EXPECT_EQ(error["param"], bad.param.empty() ? json(nullptr) : json(bad.param))
        << bad.route << " " << bad.body << ": " << reply.body;
    if (bad.status == 404) {
      EXPECT_EQ(error["code"], "model_not_found");
    }
  }
  const HttpReply outside = http.post_json("/detokenize", R"({"tokens": [1, 4096]})");
  EXPECT_NE(outside.body.find("tokens[1]"), std::string::npos) << outside.body;
  EXPECT_NE(outside.body.find("[0, 4096)"), std::string::npos) << outside.body;
  EXPECT_EQ(http.send("GET", "/tokenize").status, 405);
  // Nothing reached the engine, and the server still answers.
  EXPECT_EQ(server.metric("tandem_prompt_tokens_total"), prompt_tokens);
  EXPECT_EQ(post(http, "/tokenize", {{"prompt", "hi"}, {"model", "tandem"}})["count"],
            Tokenizer::load(kTinyTarget).encode("hi").size());
}

TEST(TokenizeRouteGate, KeysHostsAndBodyTypesAsOnV1) {
  ::setenv("TANDEM_TEST_TOKENIZE_KEY", "k-7", 1);
  TinyDeployment deployment;
  deployment.server = "  api_key_env: TANDEM_TEST_TOKENIZE_KEY\n";
  TestServer server(deployment);
  HttpClient http(server.port());
  const std::string body = R"({"prompt": "hi"})";
  const std::string ids = R"({"tokens": [1]})";
  EXPECT_EQ(http.post_json("/tokenize", body).status, 401);
  EXPECT_EQ(http.post_json("/detokenize", ids).status, 401);
  EXPECT_EQ(http.send("GET", "/v1/models/tandem").status, 401);
  const std::map<std::string, std::string> key = {{"Authorization", "Bearer k-7"}};
  EXPECT_EQ(http.post_json("/tokenize", body, key).status, 200);
  EXPECT_EQ(http.post_json("/detokenize", ids, key).status, 200);
  EXPECT_EQ(http.send("GET", "/v1/models/tandem", "", key).status, 200);
  EXPECT_EQ(http.post_json("/tokenize", body, {{"Authorization", "Bearer k-8"}}).status, 401);
  EXPECT_EQ(http.send("GET", "/health").status, 200);  // probes need no key

  auto wrong_host = key;
  wrong_host["Host"] = "attacker.example";
  EXPECT_EQ(http.post_json("/tokenize", body, wrong_host).status, 403);
  auto text_body = key;
  text_body["Content-Type"] = "text/plain";
  EXPECT_EQ(http.post_json("/tokenize", body, text_body).status, 415);
  EXPECT_EQ(http.post_json("/detokenize", ids, text_body).status, 415);
}

}  // namespace
}  // namespace tandem
