// Tests of coordinator/api/json_body: the one parser of request bodies reads
// what nlohmann reads, and refuses what nlohmann would let through: a key
// twice in one object, and anything after the value (a NUL byte included).
#include <gtest/gtest.h>

#include <string>

#include "coordinator/api/completion_request.h"
#include "coordinator/chat/chat_request.h"

namespace tandem::api {
namespace {

using namespace std::string_literals;

// The ApiError parsing `body` throws; fails the test when it parses.
ApiError refusal_of(const std::string& body) {
  try {
    parse_request_body(body);
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status, 400);
    return error;
  }
  ADD_FAILURE() << "accepted: " << body;
  return internal("accepted");
}

std::string message_of(const std::string& body) { return refusal_of(body).message; }

TEST(JsonBody, ReadsWhatNlohmannReads) {
  const std::string body = R"( {"prompt": [1, 2, 3], "stop": ["a\u0000b", "\"}"], "n": -7, "big": 18446744073709551615,
      "x": 2.5e-3, "t": true, "f": false, "z": null, "nested": {"a": [{"b": [[]]}, {}]}, "": "empty key"} )";
  EXPECT_EQ(parse_request_body(body), Json::parse(body));
  EXPECT_EQ(parse_request_body("[]"), Json::array());
  EXPECT_EQ(parse_request_body("\"text\""), Json("text"));
  EXPECT_EQ(parse_request_body("17"), Json(17));
}

TEST(JsonBody, TheSameKeyInDifferentObjectsIsFine) {
  const Json value = parse_request_body(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})");
  EXPECT_EQ(value["c"][1]["x"], 4);
}

TEST(JsonBody, ADuplicateKeyIsRefusedNamingItAndWhereItIs) {
  const ApiError top = refusal_of(R"({"prompt": "hi", "max_tokens": 5, "max_tokens": 500})");
  EXPECT_EQ(top.param, "max_tokens");
  EXPECT_NE(top.message.find("\"max_tokens\" twice"), std::string::npos) << top.message;

  const ApiError nested = refusal_of(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "role": "system"}]})");
  EXPECT_EQ(nested.param, "messages[1].role");
  EXPECT_NE(nested.message.find("messages[1].role"), std::string::npos) << nested.message;

  EXPECT_EQ(refusal_of(R"({"speculation": {"gamma": 2, "gamma": 4}})").param, "speculation.gamma");
  EXPECT_EQ(refusal_of(R"([{"a": [1, {"k": 1, "k": 2}]}])").param, "[0].a[1].k");
  // The same key written with an escape is the same key.
  EXPECT_EQ(refusal_of(R"({"top_p": 0.5, "top\u005fp": 0.9})").param, "top_p");
}

TEST(JsonBody, BytesAfterTheValueAreRefusedWithTheirOffset) {
  EXPECT_NE(message_of(R"({"prompt": "hi"} x)").find("after its JSON value, at byte 17"), std::string::npos);
  EXPECT_NE(message_of(R"({"prompt": "hi"}{"prompt": "yo"})").find("at byte 16"), std::string::npos);
  EXPECT_NE(message_of(R"({"prompt": "}"}] )").find("at byte 15"), std::string::npos);
  EXPECT_NE(message_of(R"("a" "b")").find("at byte 4"), std::string::npos);
  EXPECT_NE(message_of("5 x").find("at byte 2"), std::string::npos);
  EXPECT_NE(message_of("true false").find("at byte 5"), std::string::npos);
  // Whitespace around the value is fine.
  EXPECT_EQ(parse_request_body(" \t\r\n{\"a\": 1}\n\r\t "), Json::parse(R"({"a": 1})"));
}

TEST(JsonBody, ANulByteIsRefusedAfterTheValueOrInsideIt) {
  const std::string after = message_of("{\"prompt\": \"hi\"}\0{\"max_tokens\": 9}"s);
  EXPECT_NE(after.find("after its JSON value, at byte 16 (a NUL byte)"), std::string::npos) << after;
  EXPECT_NE(message_of("{\"prompt\": \"hi\"}\n\0"s).find("at byte 17 (a NUL byte)"), std::string::npos);
  const std::string inside = message_of("{\"prompt\": \"h\0i\"}"s);
  EXPECT_NE(inside.find("NUL byte at byte 13"), std::string::npos) << inside;
  EXPECT_NE(message_of("{\"prompt\"\0: 1}"s).find("NUL byte at byte 9"), std::string::npos);
  // A duplicate key before the NUL is the more useful thing to say.
  EXPECT_EQ(refusal_of("{\"a\": 1, \"a\": 2}\0"s).param, "a");
}

TEST(JsonBody, MalformedJsonStillGetsTheParsersPosition) {
  const ApiError error = refusal_of(R"({"prompt": "hi", "max_tokens": 4)");
  EXPECT_FALSE(error.param.has_value());
  EXPECT_NE(error.message.find("line 1, column"), std::string::npos) << error.message;
  EXPECT_EQ(error.message.find("json.exception"), std::string::npos) << error.message;
  EXPECT_NE(message_of(R"({"x": 1e400})").find("could not parse"), std::string::npos);
}

TEST(JsonBody, BothRoutesParseThroughIt) {
  RequestLimits limits;
  limits.max_tokens_limit = 1000;
  limits.vocab_size = 100;
  try {
    parse_completion_request(R"({"prompt": "hi", "max_tokens": 5, "max_tokens": 500})", limits);
    ADD_FAILURE() << "a duplicate max_tokens was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.param, "max_tokens");
  }
  try {
    chat::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi", "content": "bye"}]})", limits);
    ADD_FAILURE() << "a duplicate content was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.param, "messages[0].content");
  }
  EXPECT_THROW(parse_completion_request("{\"prompt\": \"hi\"}\0"s, limits), ApiError);
}

}  // namespace
}  // namespace tandem::api
