// Tests of tools/soak/traffic_mix.h: each kind's request is what its name
// says, and each answer is judged as docs/serving.md documents it.
#include "tools/soak/traffic_mix.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tandem::soak {
namespace {

using nlohmann::json;

MixOptions options() {
  MixOptions mix;
  mix.prompts = {"the first prompt", "another one"};
  mix.short_tokens = 8;
  mix.long_tokens = 120;
  return mix;
}

loadtest::RequestRecord answer(int status, bool ok, std::string error = "") {
  loadtest::RequestRecord record;
  record.status = status;
  record.ok = ok;
  record.error = std::move(error);
  return record;
}

TEST(MakeRequest, GoodKindsAreValidJsonOnTheirRoutes) {
  std::mt19937_64 random(1);
  for (int i = 0; i < 50; ++i) {
    for (Kind kind : {Kind::completion, Kind::completion_stream, Kind::chat, Kind::chat_stream, Kind::burst}) {
      const Request request = make_request(kind, options(), random);
      const json body = json::parse(request.body);
      const bool chat = kind == Kind::chat || kind == Kind::chat_stream;
      EXPECT_EQ(request.method, "POST");
      EXPECT_EQ(request.path, chat ? "/v1/chat/completions" : "/v1/completions");
      EXPECT_EQ(body.contains("messages"), chat);
      EXPECT_EQ(body.contains("prompt"), !chat);
      EXPECT_GE(body["max_tokens"].get<int>(), 1);
      EXPECT_LE(body["max_tokens"].get<int>(), 8);
      const bool stream = kind == Kind::completion_stream || kind == Kind::chat_stream;
      EXPECT_EQ(request.stream, stream);
      EXPECT_EQ(body.value("stream", false), stream);
      EXPECT_EQ(request.disconnect_after, 0);
    }
  }
}

TEST(MakeRequest, DisconnectAndTimeoutAskForLongAnswers) {
  std::mt19937_64 random(2);
  for (int i = 0; i < 50; ++i) {
    const Request cut = make_request(Kind::disconnect, options(), random);
    EXPECT_TRUE(cut.stream);
    EXPECT_GT(cut.disconnect_after, 0);
    EXPECT_LT(cut.disconnect_after, 0.5);
    EXPECT_EQ(json::parse(cut.body)["max_tokens"], 120);
    EXPECT_EQ(json::parse(cut.body)["ignore_eos"], true);
    const Request slow = make_request(Kind::timeout, options(), random);
    const json body = json::parse(slow.body);
    EXPECT_EQ(body["max_tokens"], 120);
    EXPECT_EQ(body["ignore_eos"], true);
    EXPECT_EQ(body["speculation"]["gamma"], 64);
  }
}

TEST(MakeRequest, BadKindsAreBad) {
  std::mt19937_64 random(3);
  for (int i = 0; i < 50; ++i) {
    const Request malformed = make_request(Kind::bad_json, options(), random);
    EXPECT_TRUE(json::parse(malformed.body, nullptr, false).is_discarded()) << malformed.body;
    const Request wrong = make_request(Kind::bad_parameter, options(), random);
    EXPECT_TRUE(json::parse(wrong.body).is_object()) << wrong.body;
    const Request nowhere = make_request(Kind::unknown_route, options(), random);
    const bool known = nowhere.path == "/v1/completions" || nowhere.path == "/v1/chat/completions";
    EXPECT_TRUE(!known || nowhere.method != "POST") << nowhere.method << " " << nowhere.path;
  }
}

TEST(Classify, GoodRequestsMayBeAnsweredTurnedAwayOrTimedOut) {
  for (Kind kind : {Kind::completion, Kind::chat_stream, Kind::timeout, Kind::burst, Kind::disconnect}) {
    EXPECT_TRUE(classify(kind, answer(200, true)).expected);
    EXPECT_TRUE(classify(kind, answer(429, false)).overloaded);
    EXPECT_TRUE(classify(kind, answer(429, false)).expected);
    EXPECT_TRUE(classify(kind, answer(504, false)).timed_out);
    const Outcome event = classify(
        kind, answer(200, false, "the request ran past its deadline of server.request_timeout_seconds"));
    EXPECT_TRUE(event.expected && event.timed_out);
  }
}

TEST(Classify, OtherFailuresOfGoodRequestsAreUnexpected) {
  for (Kind kind : {Kind::completion, Kind::chat, Kind::timeout, Kind::burst}) {
    for (int status : {500, 502, 503}) {
      const Outcome outcome = classify(kind, answer(status, false, "engine step failed"));
      EXPECT_FALSE(outcome.expected) << status;
      EXPECT_NE(outcome.why.find("engine step failed"), std::string::npos);
    }
    EXPECT_FALSE(classify(kind, answer(400, false)).expected);
    EXPECT_FALSE(classify(kind, answer(0, false, "connect: refused")).expected);
    EXPECT_FALSE(classify(kind, answer(200, false, "engine step failed")).expected);
  }
}

TEST(Classify, ADisconnectCutOffOnPurposeIsExpected) {
  const Outcome cut = classify(Kind::disconnect, answer(200, false, kDisconnectedOnPurpose));
  EXPECT_TRUE(cut.expected && cut.disconnected);
  EXPECT_TRUE(classify(Kind::disconnect, answer(0, false, kDisconnectedOnPurpose)).expected);
  // The same error on another kind is not ours to excuse.
  EXPECT_FALSE(classify(Kind::completion, answer(0, false, kDisconnectedOnPurpose)).expected);
}

TEST(Classify, BadRequestsMustGetTheirDocumented4xx) {
  EXPECT_TRUE(classify(Kind::bad_json, answer(400, false)).expected);
  EXPECT_TRUE(classify(Kind::bad_parameter, answer(400, false)).expected);
  EXPECT_TRUE(classify(Kind::unknown_route, answer(404, false)).expected);
  EXPECT_TRUE(classify(Kind::unknown_route, answer(405, false)).expected);
  EXPECT_FALSE(classify(Kind::bad_json, answer(200, true)).expected);   // accepted
  EXPECT_FALSE(classify(Kind::bad_json, answer(500, false)).expected);  // crashed on it
  EXPECT_FALSE(classify(Kind::bad_parameter, answer(404, false)).expected);
  EXPECT_FALSE(classify(Kind::unknown_route, answer(400, false)).expected);
  EXPECT_FALSE(classify(Kind::bad_parameter, answer(0, false)).expected);
}

TEST(StatusClass, NamesEachHundred) {
  EXPECT_EQ(status_class(200), "2xx");
  EXPECT_EQ(status_class(429), "4xx");
  EXPECT_EQ(status_class(504), "5xx");
  EXPECT_EQ(status_class(0), "none");
}

}  // namespace
}  // namespace tandem::soak
