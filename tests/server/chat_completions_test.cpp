// /v1/chat/completions end to end on the tiny pair (whose chat template is a
// plain-text ChatML look-alike: models/tiny/README.md). The central promise:
// a chat request is exactly a completion of its rendered prompt, so greedy
// chat output equals greedy /v1/completions output for the prompt's token
// ids, the ids of the text the chat-template renderer (`tandem
// chat-template`'s) gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/chat/chat_template.h"
#include "tests/server/test_server.h"
#include "tests/support/tiny_models.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::kTinyTarget;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;


// The text the server tokenizes for a chat body, by the CLI's renderer.
std::string rendered_prompt(const std::string& body) {
  const chat::ChatTemplate chat_template = chat::ChatTemplate::load(kTinyTarget, "tiny");
  api::RequestLimits limits;
  limits.max_tokens_limit = 1 << 20;
  return chat_template.render(chat::parse_chat_request(body, limits));
}
std::string rendered_prompt(const json& body) { return rendered_prompt(body.dump()); }

std::vector<int32_t> prompt_ids(const std::string& body) {
  return Tokenizer::load(kTinyTarget).encode(rendered_prompt(body), /*add_special=*/false);
}
std::vector<int32_t> prompt_ids(const json& body) { return prompt_ids(body.dump()); }

json conversation() {
  return json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}},
                      {{"role", "user"}, {"content", "Tell me about the old city."}}});
}

TEST(ChatCompletions, TheTinyTemplateRendersPlainTextMarkers) {
  EXPECT_EQ(rendered_prompt({{"messages", conversation()}}),
            "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nTell me about the old "
            "city.<|end|>\n<|assistant|>\n");
  EXPECT_EQ(rendered_prompt({{"messages", conversation()}, {"add_generation_prompt", false}}),
            "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nTell me about the old "
            "city.<|end|>\n");
  // The markers are ordinary text to the tiny tokenizer: no special ids.
  for (int32_t id : prompt_ids({{"messages", conversation()}})) EXPECT_NE(id, 4095);
}

TEST(ChatCompletions, GreedyChatEqualsGreedyCompletionOfTheRenderedPrompt) {
  TestServer server;
  const json messages = conversation();
  const std::vector<int32_t> ids = prompt_ids({{"messages", messages}});
  for (const json& speculation : {json(false), json{{"gamma", 4}}, json{{"drafter", "ngram"}}}) {
    const json chat = server.chat({{"messages", messages}, {"temperature", 0}, {"max_tokens", 24},
                                   {"speculation", speculation}});
    const json completion = server.complete({{"prompt", ids}, {"temperature", 0}, {"max_tokens", 24},
                                             {"speculation", speculation}});
    SCOPED_TRACE(speculation.dump());
    EXPECT_EQ(chat["choices"][0]["message"]["content"], completion["choices"][0]["text"]);
    EXPECT_EQ(chat["choices"][0]["finish_reason"], completion["choices"][0]["finish_reason"]);
    EXPECT_EQ(chat["usage"]["prompt_tokens"], static_cast<int>(ids.size()));
    for (const char* count : {"prompt_tokens", "completion_tokens", "total_tokens"})
      EXPECT_EQ(chat["usage"][count], completion["usage"][count]) << count;
    // The same tokens: the completion finds the chat's prompt in the prefix
    // cache, every whole block before its last token.
    EXPECT_EQ(completion["usage"]["prompt_tokens_details"]["cached_tokens"],
              (static_cast<int>(ids.size()) - 1) / 16 * 16);
    EXPECT_EQ(chat["speculation"]["drafter"], completion["speculation"]["drafter"]);
  }
}

// Templates render on the HTTP threads, many at once, from one parsed template.
TEST(ChatCompletions, ConcurrentChatsRenderAndAnswerAsTheyDoAlone) {
  TinyDeployment deployment;
  deployment.batch_invariant = true;  // on CUDA: batched rows round as single ones
  TestServer server(deployment);
  std::vector<json> bodies;
  for (int i = 0; i < 12; ++i) {
    bodies.push_back({{"messages", json::array({{{"role", "user"}, {"content", "Story number " + std::to_string(i % 4)}}})},
                      {"temperature", 0}, {"max_tokens", 8}});
  }
  std::vector<json> alone;
  for (int i = 0; i < 4; ++i) alone.push_back(server.chat(bodies[i]));
  std::vector<std::future<json>> replies;
  for (const json& body : bodies)
    replies.push_back(std::async(std::launch::async, [&server, body] { return server.chat(body); }));
  for (size_t i = 0; i < replies.size(); ++i) {
    const json reply = replies[i].get();
    EXPECT_EQ(reply["choices"][0]["message"]["content"], alone[i % 4]["choices"][0]["message"]["content"]) << i;
    EXPECT_EQ(reply["usage"]["prompt_tokens"], alone[i % 4]["usage"]["prompt_tokens"]) << i;
  }
}

TEST(ChatCompletions, ResponseHasOpenAiShape) {
  TestServer server;
  const json reply = server.chat({{"messages", conversation()}, {"max_tokens", 5}, {"ignore_eos", true}});
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_TRUE(reply["created"].is_number_integer());
  ASSERT_EQ(reply["choices"].size(), 1u);
  const json& choice = reply["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_TRUE(choice["message"]["content"].is_string());
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(reply["usage"]["completion_tokens"], 5);
  EXPECT_EQ(reply["usage"]["total_tokens"],
            reply["usage"]["prompt_tokens"].get<int>() + reply["usage"]["completion_tokens"].get<int>());
  EXPECT_TRUE(reply["speculation"].contains("acceptance_rate"));
}

TEST(ChatCompletions, MaxCompletionTokensIsHonoured) {
  TestServer server;
  const json reply = server.chat({{"messages", conversation()}, {"max_completion_tokens", 3},
                                  {"max_tokens", 50}, {"ignore_eos", true}});
  EXPECT_EQ(reply["usage"]["completion_tokens"], 3);
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
}

// The SSE events' JSON payloads; fails the test on a malformed stream.
std::vector<json> stream_chunks(const TestServer& server, const json& body) {
  HttpClient http(server.port());
  const auto reply = http.post_json("/v1/chat/completions", body.dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.header("content-type"), "text/event-stream");
  const std::vector<std::string> payloads = sse_payloads(reply.body);
  EXPECT_FALSE(payloads.empty());
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::vector<json> chunks;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) chunks.push_back(json::parse(payloads[i]));
  return chunks;
}

TEST(ChatCompletions, StreamedChunksFollowOpenAisFormatAndAddUpToTheWholeReply) {
  TestServer server;
  const json body = {{"messages", conversation()}, {"temperature", 0.8}, {"seed", 11},
                     {"max_tokens", 30}, {"speculation", {{"gamma", 4}}}};
  const json whole = server.chat(body);
  json streamed = body;
  streamed["stream"] = true;
  const std::vector<json> chunks = stream_chunks(server, streamed);
  ASSERT_GE(chunks.size(), 3u);
  // First the role, with empty content.
  EXPECT_EQ(chunks.front()["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  std::string content;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const json& chunk = chunks[i];
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["id"], chunks.front()["id"]);
    EXPECT_FALSE(chunk.contains("usage"));  // not asked for
    ASSERT_EQ(chunk["choices"].size(), 1u);
    const json& choice = chunk["choices"][0];
    if (i + 1 < chunks.size()) {
      EXPECT_TRUE(choice["finish_reason"].is_null());
      if (i > 0) {
        EXPECT_EQ(choice["delta"].size(), 1u) << choice.dump();
      }
      content += choice["delta"].value("content", "");
    } else {  // the last: an empty delta and the finish reason
      EXPECT_EQ(choice["delta"], json::object());
      EXPECT_EQ(choice["finish_reason"], whole["choices"][0]["finish_reason"]);
    }
  }
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"].get<std::string>());
}

TEST(ChatCompletions, IncludeUsageEndsTheStreamWithAUsageChunk) {
  TestServer server;
  const json body = {{"messages", conversation()}, {"max_tokens", 6}, {"ignore_eos", true},
                     {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  const std::vector<json> chunks = stream_chunks(server, body);
  ASSERT_GE(chunks.size(), 3u);
  const json& last = chunks.back();
  EXPECT_EQ(last["choices"], json::array());
  EXPECT_EQ(last["usage"]["completion_tokens"], 6);
  EXPECT_EQ(last["usage"]["prompt_tokens"], static_cast<int>(prompt_ids(body).size()));
  EXPECT_TRUE(last.contains("speculation"));
  for (size_t i = 0; i + 1 < chunks.size(); ++i) EXPECT_TRUE(chunks[i]["usage"].is_null());
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "length");
}

TEST(ChatCompletions, ToolsReachTheTemplateInTheClientsKeyOrder) {
  TestServer server;
  // Raw text: nlohmann::json would sort the keys; the client's order is "type" first.
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather?"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
          {"type": "object", "properties": {"city": {"type": "string"}}}}}],
      "temperature": 0, "max_tokens": 8})";
  const std::string prompt = rendered_prompt(body);
  EXPECT_NE(prompt.find(R"({"type": "function", "function": {"name": "get_weather", "parameters": )"
                        R"({"type": "object", "properties": {"city": {"type": "string"}}}}})"),
            std::string::npos) << prompt;
  HttpClient http(server.port());
  const auto raw = http.post_json("/v1/chat/completions", body);
  ASSERT_EQ(raw.status, 200) << raw.body;
  const json reply = json::parse(raw.body);
  const json completion = server.complete({{"prompt", prompt_ids(body)}, {"temperature", 0}, {"max_tokens", 8}});
  EXPECT_EQ(reply["usage"]["prompt_tokens"], completion["usage"]["prompt_tokens"]);
  EXPECT_EQ(reply["choices"][0]["message"]["content"], completion["choices"][0]["text"]);
  // tool_choice "none": the template gets no tools.
  json without = json::parse(body);
  without["tool_choice"] = "none";
  EXPECT_EQ(rendered_prompt(without).find("get_weather"), std::string::npos);
  EXPECT_LT(server.chat(without)["usage"]["prompt_tokens"].get<int>(),
            reply["usage"]["prompt_tokens"].get<int>());
}

TEST(ChatCompletions, ATemplateThatRaisesIsA400WithItsMessage) {
  TestServer server;
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}},
                                               {{"role", "system"}, {"content", "late"}}})}};
  const json error = server.chat(body, 400)["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_EQ(error["param"], "messages");
  EXPECT_NE(error["message"].get<std::string>().find("The system message must be the first message."),
            std::string::npos) << error.dump();
  EXPECT_EQ(server.client().send("GET", "/health").status, 200);
}

TEST(ChatCompletions, BadRequestsAreRefusedNamingTheField) {
  TestServer server;
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"messages", json::array({{{"role", "robot"}, {"content", "Hi"}}})}}, "messages[0].role"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "a"}},
                                  {{"role", "user"}, {"content", "b"}},
                                  {{"role", "user"}, {"content", json::array({{{"type", "image_url"}}})}}})}},
       "messages[2].content[0].type"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", conversation()}, {"max_completion_tokens", 0}}, "max_completion_tokens"},
      {{{"messages", conversation()}, {"temperature", -1}}, "temperature"},
      {{{"messages", conversation()}, {"tool_choice", "required"}}, "tool_choice"},
      {{{"messages", conversation()}, {"max_tokens", 250}}, "max_tokens"},  // beyond the context
      {{{"messages", conversation()}, {"max_completion_tokens", 250}}, "max_completion_tokens"},
  };
  for (const Case& c : cases) {
    const json error = server.chat(c.body, 400)["error"];
    EXPECT_EQ(error["param"], c.param) << c.body.dump() << " -> " << error.dump();
  }
  EXPECT_EQ(server.client().send("GET", "/health").status, 200);
}

// The tiny tokenizer in a directory of its own, with `config_changes` merged
// into its tokenizer_config.json (null values remove keys); removed when done.
class TokenizerDir {
 public:
  explicit TokenizerDir(const json& config_changes)
      : path_(std::filesystem::temp_directory_path() /
              ("tandem_chat_tokenizer_" + std::to_string(getpid()) + "_" + std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
    std::filesystem::copy_file(kTinyTarget / "tokenizer.json", path_ / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::ifstream in(kTinyTarget / "tokenizer_config.json");
    json config = json::parse(in);
    config.merge_patch(config_changes);
    std::ofstream(path_ / "tokenizer_config.json") << config.dump(2);
  }
  ~TokenizerDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// A template that writes the BOS itself, for a tokenizer that adds one to
// completions: the chat prompt has it once, as the special token's id.
TEST(ChatCompletions, TheTemplatesBosIsTheOnlyBosAndSpecialTokensAreRecognized) {
  const TokenizerDir dir(json{{"add_bos_token", true},
                              {"chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}});
  TinyDeployment deployment;
  deployment.target_tokenizer = dir.path();
  TestServer server(deployment);
  const Tokenizer tokenizer = Tokenizer::load(dir.path());
  ASSERT_EQ(tokenizer.encode("Hello there", /*add_special=*/true).front(), 4095);  // completions add it
  std::vector<int32_t> expected = {4095};
  for (int32_t id : tokenizer.encode("Hello there", false)) expected.push_back(id);

  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hello there"}}})},
                     {"temperature", 0}, {"max_tokens", 12}};
  const json chat = server.chat(body);
  const json completion = server.complete({{"prompt", expected}, {"temperature", 0}, {"max_tokens", 12}});
  EXPECT_EQ(chat["usage"]["prompt_tokens"], static_cast<int>(expected.size()));
  EXPECT_EQ(chat["choices"][0]["message"]["content"], completion["choices"][0]["text"]);
  // The text "<|endoftext|>" in a message is the special token too (as in
  // transformers): the template's text is tokenized as a whole.
  const json spelled = {{"messages", json::array({{{"role", "user"}, {"content", "<|endoftext|>Hello there"}}})},
                        {"temperature", 0}, {"max_tokens", 12}};
  EXPECT_EQ(server.chat(spelled)["usage"]["prompt_tokens"], static_cast<int>(expected.size()) + 1);
}

TEST(ChatCompletions, AModelWithoutAChatTemplateIsA400SayingSo) {
  // The tiny target's tokenizer, in a directory whose config has no template.
  const TokenizerDir dir(json{{"chat_template", nullptr}});
  TinyDeployment deployment;
  deployment.target_tokenizer = dir.path();
  TestServer server(deployment);
  const json error = server.chat({{"messages", conversation()}}, 400)["error"];
  const std::string message = error["message"];
  EXPECT_NE(message.find("has no chat template"), std::string::npos) << message;
  EXPECT_NE(message.find("chat_template"), std::string::npos) << message;  // what to add
  // Completions still work.
  EXPECT_EQ(server.complete({{"prompt", "Hello"}, {"max_tokens", 2}})["object"], "text_completion");
}

}  // namespace
}  // namespace tandem
