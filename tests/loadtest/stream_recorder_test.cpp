// StreamRecorder on made-up event streams and made-up clocks: TTFT and ITL
// as vLLM's `bench serve` defines them, events split anywhere, usage, and
// error events.
#include "tools/loadtest/stream_recorder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::loadtest {
namespace {

std::string text_event(const std::string& text) {
  nlohmann::json chunk = {{"object", "text_completion"},
                          {"choices", {{{"text", text}, {"index", 0}, {"finish_reason", nullptr}}}}};
  return "data: " + chunk.dump() + "\n\n";
}

std::string usage_event(int prompt, int completion) {
  nlohmann::json chunk = {{"choices", nlohmann::json::array()},
                          {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
  return "data: " + chunk.dump() + "\n\n";
}

TEST(StreamRecorder, TimesTextEventsAndSkipsEmptyOnes) {
  StreamRecorder recorder;
  const std::vector<std::string> pieces = {"Once", "", " upon", " a", "", " time"};
  const std::vector<double> arrived = {0.10, 0.12, 0.15, 0.21, 0.25, 0.30};
  for (size_t i = 0; i < pieces.size(); ++i) recorder.feed(text_event(pieces[i]), arrived[i]);
  recorder.feed("data: [DONE]\n\n", 0.4);
  RequestRecord record;
  recorder.fill(record, 0.5);

  EXPECT_EQ(record.text, "Once upon a time");
  EXPECT_EQ(recorder.text_events(), 4);
  EXPECT_DOUBLE_EQ(record.ttft, 0.10);
  ASSERT_EQ(record.itl.size(), 3u);  // text events - 1
  EXPECT_NEAR(record.itl[0], 0.05, 1e-12);
  EXPECT_NEAR(record.itl[1], 0.06, 1e-12);
  EXPECT_NEAR(record.itl[2], 0.09, 1e-12);
  EXPECT_DOUBLE_EQ(record.latency, 0.4);  // at [DONE], not at the end of the body
  EXPECT_EQ(record.output_tokens, 4);     // no usage chunk: one token per text event
  EXPECT_FALSE(recorder.failed());
}

TEST(StreamRecorder, EventsSplitAcrossReadsAndCrlfLineEnds) {
  std::string stream = text_event("alpha") + text_event("beta") + usage_event(7, 11) + "data: [DONE]\n\n";
  std::string crlf;
  for (char c : stream) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  StreamRecorder recorder;
  // Three bytes at a time, each read a millisecond later.
  for (size_t at = 0; at < crlf.size(); at += 3)
    recorder.feed(std::string_view(crlf).substr(at, 3), 0.001 * static_cast<double>(at / 3));
  RequestRecord record;
  recorder.fill(record, 9);
  EXPECT_EQ(record.text, "alphabeta");
  EXPECT_EQ(record.prompt_tokens, 7);
  EXPECT_EQ(record.output_tokens, 11);  // usage wins over the count of events
  EXPECT_TRUE(recorder.saw_done());
  // Each event counts in the read that brings its closing blank line.
  const size_t first_end = crlf.find("\r\n\r\n") + 3;
  const size_t second_end = crlf.find("\r\n\r\n", first_end) + 3;
  EXPECT_DOUBLE_EQ(record.ttft, 0.001 * static_cast<double>(first_end / 3));
  ASSERT_EQ(record.itl.size(), 1u);
  EXPECT_NEAR(record.itl[0], 0.001 * static_cast<double>(second_end / 3 - first_end / 3), 1e-12);
  EXPECT_LT(record.latency, 9);
}

TEST(StreamRecorder, ErrorEventFailsTheStream) {
  StreamRecorder recorder;
  recorder.feed(text_event("some"), 0.1);
  recorder.feed("data: {\"error\": {\"message\": \"the server is shutting down\", \"type\": \"x\"}}\n\n", 0.2);
  recorder.feed("data: [DONE]\n\n", 0.3);
  EXPECT_TRUE(recorder.failed());
  EXPECT_EQ(recorder.error(), "the server is shutting down");
  RequestRecord record;
  recorder.fill(record, 1);
  EXPECT_EQ(record.text, "some");
}

TEST(StreamRecorder, EventWithoutClosingBlankLineCountsAtEndOfBody) {
  StreamRecorder recorder;
  recorder.feed(text_event("a"), 0.1);
  recorder.feed(": keep-alive comment\n\n", 0.15);
  recorder.feed("data: {\"choices\": [{\"text\": \"b\"}]}", 0.2);
  RequestRecord before;
  recorder.fill(before, 0.2);
  EXPECT_EQ(before.text, "a");
  recorder.end_of_body(0.25);
  RequestRecord after;
  recorder.fill(after, 0.25);
  EXPECT_EQ(after.text, "ab");
  EXPECT_DOUBLE_EQ(after.latency, 0.25);  // no [DONE]: the end of the body
  EXPECT_EQ(after.output_tokens, 2);
}

TEST(StreamRecorder, NonJsonEventIsAnError) {
  StreamRecorder recorder;
  recorder.feed("data: {truncated\n\n", 0.1);
  EXPECT_TRUE(recorder.failed());
  EXPECT_NE(recorder.error().find("not JSON"), std::string::npos);
}

// A chat stream as the chat endpoint sends it, written out literally.
const char* const kChatStream =
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Paris\"},\"finish_reason\":null}]}\n\n"
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" is\"},\"finish_reason\":null}]}\n\n"
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" big.\"},\"finish_reason\":null}]}\n\n"
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":5,\"total_tokens\":26},"
    "\"speculation\":{\"target_steps\":2,\"draft_tokens\":8,\"accepted_tokens\":3}}\n\n"
    "data: [DONE]\n\n";

// The stream's events, each with its closing blank line.
std::vector<std::string> events_of(const std::string& stream) {
  std::vector<std::string> events;
  for (size_t at = 0; at < stream.size();) {
    const size_t end = stream.find("\n\n", at) + 2;
    events.push_back(stream.substr(at, end - at));
    at = end;
  }
  return events;
}

TEST(StreamRecorder, ChatRoleChunkIsNotATokenAndContentChunksAreTimed) {
  const std::vector<std::string> events = events_of(kChatStream);
  ASSERT_EQ(events.size(), 7u);
  const std::vector<double> arrived = {0.05, 0.20, 0.26, 0.35, 0.36, 0.37, 0.38};
  StreamRecorder recorder;
  for (size_t i = 0; i < events.size(); ++i) recorder.feed(events[i], arrived[i]);
  RequestRecord record;
  recorder.fill(record, 0.5);
  EXPECT_FALSE(recorder.failed()) << recorder.error();
  EXPECT_EQ(record.text, "Paris is big.");
  EXPECT_EQ(recorder.text_events(), 3);
  EXPECT_DOUBLE_EQ(record.ttft, 0.20);  // the first content, not the role chunk at 0.05
  ASSERT_EQ(record.itl.size(), 2u);
  EXPECT_NEAR(record.itl[0], 0.06, 1e-12);
  EXPECT_NEAR(record.itl[1], 0.09, 1e-12);
  EXPECT_EQ(record.prompt_tokens, 21);  // from usage, not counted
  EXPECT_EQ(record.output_tokens, 5);   // usage says 5; there were 3 content chunks
  EXPECT_TRUE(recorder.saw_done());
  EXPECT_DOUBLE_EQ(record.latency, 0.38);
}

TEST(StreamRecorder, ChatStreamSplitAnywhereGivesTheSameRecord) {
  const std::string stream = kChatStream;
  for (size_t step : {1, 7, 64}) {
    SCOPED_TRACE(step);
    StreamRecorder recorder;
    for (size_t at = 0; at < stream.size(); at += step)
      recorder.feed(std::string_view(stream).substr(at, step), 1.0);
    RequestRecord record;
    recorder.fill(record, 2.0);
    EXPECT_EQ(record.text, "Paris is big.");
    EXPECT_EQ(record.itl.size(), 2u);
    EXPECT_EQ(record.output_tokens, 5);
    EXPECT_TRUE(recorder.saw_done());
  }
}

TEST(StreamRecorder, ChatWithoutUsageCountsContentChunks) {
  StreamRecorder recorder;
  recorder.feed("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n", 0.1);
  recorder.feed("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n", 0.2);
  recorder.feed("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":null},\"finish_reason\":\"length\"}]}\n\n", 0.3);
  recorder.feed("data: [DONE]\n\n", 0.4);
  RequestRecord record;
  recorder.fill(record, 1);
  EXPECT_EQ(record.text, "a");
  EXPECT_EQ(record.output_tokens, 1);
  EXPECT_DOUBLE_EQ(record.ttft, 0.2);
  EXPECT_TRUE(record.itl.empty());
  EXPECT_FALSE(recorder.failed());
}

// OpenAI's usage.prompt_tokens_details.cached_tokens: the prompt tokens the
// server's prefix cache held; absent or null details read as 0.
TEST(StreamRecorder, CachedTokensComeFromUsagePromptTokensDetails) {
  const auto cached_of = [](const std::string& usage) {
    StreamRecorder recorder;
    recorder.feed(text_event("a"), 0.1);
    recorder.feed("data: {\"choices\":[],\"usage\":" + usage + "}\n\ndata: [DONE]\n\n", 0.2);
    RequestRecord record;
    recorder.fill(record, 1);
    EXPECT_FALSE(recorder.failed()) << recorder.error();
    EXPECT_EQ(record.prompt_tokens, 40);
    return record.cached_tokens;
  };
  EXPECT_EQ(cached_of(R"({"prompt_tokens":40,"completion_tokens":1,)"
                      R"("prompt_tokens_details":{"cached_tokens":32}})"),
            32);
  EXPECT_EQ(cached_of(R"({"prompt_tokens":40,"completion_tokens":1,"prompt_tokens_details":null})"),
            0);
  EXPECT_EQ(cached_of(R"({"prompt_tokens":40,"completion_tokens":1})"), 0);
}

TEST(ErrorMessageIn, OpenAiAndVllmShapes) {
  using nlohmann::json;
  EXPECT_EQ(error_message_in(json{{"error", {{"message", "bad max_tokens"}, {"code", 400}}}}),
            "bad max_tokens");
  EXPECT_EQ(error_message_in(json{{"object", "error"}, {"message", "flat"}}), "flat");
  // A chunk that merely has a "message" field is not an error.
  EXPECT_EQ(error_message_in(json{{"message", "hello"}, {"choices", json::array()}}), "");
  EXPECT_EQ(error_message_in(json("text")), "");
}

}  // namespace
}  // namespace tandem::loadtest
