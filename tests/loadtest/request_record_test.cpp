// Tests of tools/loadtest/request_record.h's fail_empty_completion, alone and
// through run_load and run_conversations against a loopback fake
// (tests/support/fake_http_server.h) whose 200 streams carry no text: such a
// request is failed, never a success with a TTFT of 0, and no TTFT of it
// reaches the statistics.
#include "tools/loadtest/request_record.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/fake_http_server.h"
#include "tools/loadtest/conversation_runner.h"
#include "tools/loadtest/load_runner.h"
#include "tools/loadtest/statistics.h"

namespace tandem::loadtest {
namespace {

using test_support::FakeAnswer;
using test_support::FakeServer;

// A streamed completion whose one chunk carries `text`, then the usage chunk
// and [DONE], as our server and vLLM send it.
std::string completion_stream(const std::string& text, int completion_tokens) {
  const nlohmann::json chunk = {{"object", "text_completion"},
                                {"choices", {{{"index", 0}, {"text", text}}}}};
  const nlohmann::json usage = {{"object", "text_completion"},
                                {"choices", nlohmann::json::array()},
                                {"usage", {{"prompt_tokens", 4}, {"completion_tokens", completion_tokens}}}};
  return "data: " + chunk.dump() + "\n\ndata: " + usage.dump() + "\n\ndata: [DONE]\n\n";
}

RequestRecord ok_record(const std::string& text, int output_tokens) {
  RequestRecord record;
  record.ok = true;
  record.status = 200;
  record.text = text;
  record.output_tokens = output_tokens;
  record.ttft = 0.25;
  record.itl = {0.01};
  return record;
}

TEST(FailEmptyCompletion, NoTextOrNoTokensIsAFailureWithoutTimings) {
  for (const RequestRecord& given : {ok_record("", 0), ok_record("", 3), ok_record("hi", 0)}) {
    RequestRecord record = given;
    fail_empty_completion(record);
    EXPECT_FALSE(record.ok) << given.text << " " << given.output_tokens;
    EXPECT_EQ(record.error, kEmptyCompletion);
    EXPECT_EQ(record.status, 200);  // the server did answer 200
    EXPECT_EQ(record.ttft, 0);
    EXPECT_TRUE(record.itl.empty());
  }
}

TEST(FailEmptyCompletion, LeavesRealCompletionsAndEarlierFailuresAlone) {
  RequestRecord good = ok_record("hello", 2);
  fail_empty_completion(good);
  EXPECT_TRUE(good.ok);
  EXPECT_EQ(good.ttft, 0.25);

  RequestRecord failed;
  failed.status = 500;
  failed.error = "boom";
  fail_empty_completion(failed);
  EXPECT_EQ(failed.error, "boom");  // the server's reason stays
}

TEST(RunLoad, AnEmptyCompletionIsAFailedRequestWithNoTtft) {
  std::atomic<int> served{0};
  // Every other answer is a stream with no text and 0 completion tokens.
  FakeServer server([&](const std::string&, const std::string&, const std::string&) {
    const bool empty = served++ % 2 == 0;
    return FakeAnswer{200, empty ? completion_stream("", 0) : completion_stream("four words of text", 4),
                      "text/event-stream"};
  });
  Endpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = server.port();
  LoadShape shape;
  shape.concurrency = 1;  // one at a time, so empty and full answers alternate in send order
  shape.max_requests = 6;
  shape.request_timeout_seconds = 10;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(endpoint, {R"({"prompt": "x", "max_tokens": 4})"}, shape, nullptr, duration);
  ASSERT_EQ(records.size(), 6u);
  for (size_t i = 0; i < records.size(); ++i) {
    const bool empty = i % 2 == 0;
    EXPECT_EQ(records[i].ok, !empty) << i;
    EXPECT_EQ(records[i].status, 200) << i;
    EXPECT_EQ(records[i].error, empty ? kEmptyCompletion : "") << i;
    if (!empty) {
      EXPECT_GT(records[i].ttft, 0) << i;
    }
  }
  const RunSummary summary = summarize(records, duration, {});
  EXPECT_EQ(summary.completed, 3u);
  EXPECT_EQ(summary.failed, 3u);
  EXPECT_EQ(summary.ttft.count, 3u);  // no TTFT of an empty completion
  EXPECT_GT(summary.ttft.min, 0);
  EXPECT_EQ(summary.output_tokens, 12);
  EXPECT_EQ(summary.first_error_by_status.at(200), kEmptyCompletion);
}

// A chat turn answered with no content fails too, and ends its conversation:
// an empty reply is nothing to build the next turn on.
TEST(RunConversations, AnEmptyReplyFailsTheTurnAndEndsTheConversation) {
  std::atomic<int> served{0};
  FakeServer server([&](const std::string&, const std::string&, const std::string&) {
    ++served;
    const nlohmann::json role = {{"object", "chat.completion.chunk"},
                                 {"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}}}}}}};
    const nlohmann::json empty = {{"object", "chat.completion.chunk"},
                                  {"choices", {{{"index", 0}, {"delta", {{"content", ""}}}}}}};
    const nlohmann::json usage = {{"object", "chat.completion.chunk"},
                                  {"choices", nlohmann::json::array()},
                                  {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 0}}}};
    return FakeAnswer{200,
                      "data: " + role.dump() + "\n\ndata: " + empty.dump() + "\n\ndata: " +
                          usage.dump() + "\n\ndata: [DONE]\n\n",
                      "text/event-stream"};
  });
  Endpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = server.port();
  endpoint.path = "/v1/chat/completions";
  Conversation conversation;
  conversation.where = "test:1";
  conversation.turns = {ConversationTurn{{{"user", "hello"}}, std::nullopt},
                        ConversationTurn{{{"user", "and then?"}}, std::nullopt}};
  ConversationShape shape;
  shape.max_requests = 4;
  shape.request_timeout_seconds = 10;
  const ConversationRun run = run_conversations(endpoint, {conversation}, shape, {}, nullptr);
  ASSERT_FALSE(run.records.empty());
  for (const RequestRecord& record : run.records) {
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, kEmptyCompletion);
  }
  // Each replay stops at its first turn: the second is never sent.
  for (const ConversationRecord& replayed : run.conversations) {
    EXPECT_EQ(replayed.turns.size(), 1u);
    EXPECT_FALSE(replayed.finished);
  }
  EXPECT_EQ(served.load(), static_cast<int>(run.records.size()));
}

}  // namespace
}  // namespace tandem::loadtest
