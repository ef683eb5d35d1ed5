// Tests of tools/loadtest/conversation.h: both JSONL layouts cut into
// preamble and turns, and each malformed line's error naming file:line and
// the field at fault.
#include "tools/loadtest/conversation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/error.h"
#include "tests/support/temp_file.h"
#include "tests/support/expect_error.h"

namespace tandem::loadtest {
namespace {

using test_support::expect_invalid;

using test_support::write_temp_file;

TEST(ReadConversations, OpenAiLayoutIsCutIntoPreambleAndTurns) {
  const auto path = write_temp_file(
      "openai.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."},)"
      R"( {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},)"
      R"( {"role": "user", "content": "Name a colour"}, {"role": "assistant", "content": "Red."},)"
      R"( {"role": "user", "content": "Another"}], "max_tokens": 12})"
      "\n");
  const std::vector<Conversation> conversations = read_conversations(path);
  ASSERT_EQ(conversations.size(), 1u);
  const Conversation& c = conversations[0];
  EXPECT_EQ(c.where, path.string() + ":1");
  EXPECT_EQ(c.preamble, (std::vector<ChatMessage>{{"system", "Be brief."}}));
  ASSERT_EQ(c.turns.size(), 3u);
  EXPECT_EQ(c.turns[0].said, (std::vector<ChatMessage>{{"user", "Hi"}}));
  EXPECT_EQ(c.turns[0].recorded_reply, "Hello!");
  EXPECT_EQ(c.turns[1].said, (std::vector<ChatMessage>{{"user", "Name a colour"}}));
  EXPECT_EQ(c.turns[1].recorded_reply, "Red.");
  EXPECT_EQ(c.turns[2].said, (std::vector<ChatMessage>{{"user", "Another"}}));
  EXPECT_FALSE(c.turns[2].recorded_reply.has_value());  // the last turn awaits its reply
  EXPECT_EQ(c.max_tokens, 12);
}

TEST(ReadConversations, ShareGptLayoutMapsHumanAndGptAndAcceptsUserAndAssistant) {
  const auto path = write_temp_file(
      "sharegpt.jsonl",
      "\n"
      R"({"id": "x1", "conversations": [{"from": "human", "value": "Q1"}, {"from": "gpt", "value": "A1"},)"
      R"( {"from": "user", "value": "Q2"}, {"from": "assistant", "value": "A2"}]})"
      "\n   \n"
      R"({"conversations": [{"from": "gpt", "value": "Welcome."}, {"from": "system", "value": "S"},)"
      R"( {"from": "human", "value": "Q"}, {"from": "system", "value": "Mind the rules"},)"
      R"( {"from": "human", "value": "Q again"}, {"from": "gpt", "value": "A"}]})"
      "\n");
  const std::vector<Conversation> conversations = read_conversations(path);
  ASSERT_EQ(conversations.size(), 2u);
  const Conversation& first = conversations[0];
  EXPECT_EQ(first.where, path.string() + ":2");  // blank lines count in the numbering
  EXPECT_TRUE(first.preamble.empty());
  ASSERT_EQ(first.turns.size(), 2u);
  EXPECT_EQ(first.turns[0].said, (std::vector<ChatMessage>{{"user", "Q1"}}));
  EXPECT_EQ(first.turns[0].recorded_reply, "A1");
  EXPECT_EQ(first.turns[1].said, (std::vector<ChatMessage>{{"user", "Q2"}}));
  EXPECT_EQ(first.turns[1].recorded_reply, "A2");
  EXPECT_FALSE(first.max_tokens.has_value());

  // A greeting and a system prompt before the first user message are the
  // preamble; everything the user side says before the reply is one turn.
  const Conversation& second = conversations[1];
  EXPECT_EQ(second.where, path.string() + ":4");
  EXPECT_EQ(second.preamble,
            (std::vector<ChatMessage>{{"assistant", "Welcome."}, {"system", "S"}}));
  ASSERT_EQ(second.turns.size(), 1u);
  EXPECT_EQ(second.turns[0].said, (std::vector<ChatMessage>{{"user", "Q"},
                                                             {"system", "Mind the rules"},
                                                             {"user", "Q again"}}));
  EXPECT_EQ(second.turns[0].recorded_reply, "A");
}

TEST(ReadConversations, MalformedLinesNameFileLineAndField) {
  const std::string good = R"({"messages": [{"role": "user", "content": "fine"}]})";
  struct Case {
    std::string line;
    std::string names;  // what the message must name besides file:line
  };
  const std::vector<Case> cases = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {R"({"prompt": "hi"})", "\"messages\" (OpenAI layout) or \"conversations\""},
      {R"({"messages": [], "conversations": []})", "not both"},
      {R"({"messages": []})", "\"messages\" must be a non-empty array"},
      {R"({"conversations": "hello"})", "\"conversations\" must be a non-empty array"},
      {R"({"messages": ["hi"]})", "\"messages\"[0] must be an object"},
      {R"({"messages": [{"content": "hi"}]})", "\"messages\"[0].role must be a string"},
      {R"({"messages": [{"role": "user", "content": "a"}, {"role": "human", "content": "b"}]})",
       "\"messages\"[1].role is \"human\""},
      {R"({"conversations": [{"from": "bot", "value": "b"}]})", "\"conversations\"[0].from is \"bot\""},
      {R"({"messages": [{"role": "user", "content": 3}]})", "\"messages\"[0].content must be a string"},
      {R"({"conversations": [{"from": "human", "content": "b"}]})",
       "\"conversations\"[0].value must be a string"},
      {R"({"messages": [{"role": "system", "content": "s"}]})", "has no user message"},
      {R"({"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"},)"
       R"( {"role": "assistant", "content": "b"}]})",
       "\"messages\"[2] is a second assistant message in a row"},
      {R"({"messages": [{"role": "user", "content": "u"}], "max_tokens": 0})",
       "\"max_tokens\" must be an integer >= 1"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].line);
    // The bad line is the third, after a good line and a blank one.
    const auto path = write_temp_file("bad" + std::to_string(i) + ".jsonl",
                                      good + "\n\n" + cases[i].line + "\n" + good + "\n");
    expect_invalid([&] { read_conversations(path); }, path.string() + ":3");
    expect_invalid([&] { read_conversations(path); }, cases[i].names);
  }
}

TEST(ReadConversations, MissingFileIsNotFound) {
  try {
    read_conversations("/nonexistent/conversations.jsonl");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/conversations.jsonl"), std::string::npos);
  }
}

TEST(ReadConversations, TheSampleFileReadsInBothLayouts) {
  const std::vector<Conversation> conversations =
      read_conversations(std::filesystem::path(TANDEM_SOURCE_DIR) / "tools/loadtest/sample_conversations.jsonl");
  ASSERT_GE(conversations.size(), 4u);
  for (const Conversation& c : conversations) EXPECT_GE(c.turns.size(), 2u) << c.where;
}

}  // namespace
}  // namespace tandem::loadtest
