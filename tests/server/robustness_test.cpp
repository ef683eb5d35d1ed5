// Nothing a client sends can crash or wedge the server: random mutations of
// a valid request body, random bytes in place of HTTP, and abrupt hang-ups,
// after which every KV block is free and the server still answers correctly.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using test_support::HttpClient;
using test_support::TestServer;

// One random edit of `text`: flip, insert, delete or duplicate a span.
std::string mutate(std::string text, std::mt19937& rng) {
  const std::string alphabet = "{}[]\",:0123456789-.eE truefalsenul\\\x01\xff\xc3";
  std::uniform_int_distribution<int> kind(0, 3);
  for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0 && !text.empty(); --edits) {
    const size_t at = rng() % text.size();
    switch (kind(rng)) {
      case 0:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        break;
      case 2:
        text.erase(at, 1 + rng() % 5);
        break;
      default:
        text.insert(at, text.substr(at, 1 + rng() % 12));
        break;
    }
  }
  return text;
}

TEST(Robustness, RandomlyMutatedBodiesGetAnswersAndChangeNothing) {
  TestServer server;
  const std::string valid =
      R"({"model": "tandem", "prompt": "The old man", "max_tokens": 3, "temperature": 0.5, "top_p": 0.9, "seed": 4, "stop": ["x"], "speculation": {"gamma": 2, "drafter": "model"}})";
  std::mt19937 rng(20261122);
  HttpClient http(server.port());
  int ok = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    const test_support::HttpReply reply = http.post_json("/v1/completions", mutate(valid, rng));
    ASSERT_TRUE(reply.status == 200 || (reply.status >= 400 && reply.status < 500))
        << reply.status << " " << reply.body;
    (reply.status == 200 ? ok : rejected) += 1;
  }
  EXPECT_GT(rejected, 100);  // the mutations really produce bad requests
  // The gauge follows the engine thread's next loop: poll briefly.
  bool all_free = false;
  for (int i = 0; i < 500 && !all_free; ++i) {
    all_free = server.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0;
    if (!all_free) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(all_free);
  EXPECT_EQ(http.post_json("/v1/completions", valid).status, 200);
}

// The same for chat bodies: the request parser, the template's context and
// rendering, continue_final_message and tool-call parsing all see the damage.
TEST(Robustness, RandomlyMutatedChatBodiesGetAnswersAndChangeNothing) {
  TestServer server;
  const std::string valid =
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},)"
      R"( {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"c\": 1}"}}]},)"
      R"( {"role": "tool", "tool_call_id": "c1", "content": "sunny"}, {"role": "assistant", "content": "It is"}],)"
      R"( "tools": [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}], "max_tokens": 3,)"
      R"( "continue_final_message": true, "chat_template_kwargs": {"x": 1}, "stream": false, "seed": 4})";
  std::mt19937 rng(20261126);
  HttpClient http(server.port());
  int ok = 0, rejected = 0;
  for (int i = 0; i < 600; ++i) {
    std::string body = mutate(valid, rng);
    // A mutation that drops max_tokens would let a reply run to the context: keep replies short.
    if (body.find("\"max_tokens\": 3") == std::string::npos) body.insert(1, R"("max_tokens": 2, )");
    const test_support::HttpReply reply = http.post_json("/v1/chat/completions", body);
    ASSERT_TRUE(reply.status == 200 || (reply.status >= 400 && reply.status < 500))
        << reply.status << " " << reply.body;
    (reply.status == 200 ? ok : rejected) += 1;
  }
  EXPECT_GT(rejected, 200);
  EXPECT_GT(ok, 10);  // and some damage still renders and runs
  bool all_free = false;
  for (int i = 0; i < 500 && !all_free; ++i) {
    all_free = server.metric("tandem_kv_cache_blocks_used{model=\"target\"}") == 0;
    if (!all_free) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(all_free);
  EXPECT_EQ(http.post_json("/v1/chat/completions", valid).status, 200);
}

TEST(Robustness, RandomBytesAndHangUpsLeaveTheServerServing) {
  TestServer server;
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    HttpClient http(server.port());
    std::string garbage(1 + rng() % 3000, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    if (i % 2) garbage = "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + garbage.substr(0, 40);
    http.write_raw(garbage);
    http.close();  // hang up without reading
  }
  HttpClient http(server.port());
  EXPECT_EQ(http.send("GET", "/health").status, 200);
  EXPECT_EQ(http.post_json("/v1/completions", R"({"prompt": "The", "max_tokens": 4})").status, 200);
}

}  // namespace
}  // namespace tandem
