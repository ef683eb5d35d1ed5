// run_conversations (and run_load with chat bodies) against FakeChatServer
// on loopback: each turn carries the history with the fake's earlier
// replies (or the file's, with History::recorded), the bounds stop a run,
// and failures are recorded and counted as failures.
#include "tools/loadtest/conversation_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "tests/loadtest/fake_chat_server.h"
#include "tests/support/expect_error.h"
#include "tools/loadtest/load_runner.h"
#include "tools/loadtest/statistics.h"

namespace tandem::loadtest {
namespace {

using nlohmann::json;
using test_support::FakeChatServer;

Conversation conversation(const std::string& name, int turns, bool with_system = true) {
  Conversation c;
  c.where = name;
  if (with_system) c.preamble.push_back({"system", "You are " + name + "'s helper."});
  for (int t = 0; t < turns; ++t)
    c.turns.push_back({{{"user", name + " asks question " + std::to_string(t)}},
                       "recorded answer " + std::to_string(t) + " of " + name});
  return c;
}

json message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

Endpoint chat_endpoint(const FakeChatServer& server) {
  return parse_url(server.url(), default_path(Api::chat));
}

ConversationShape shape_of(int concurrency, size_t max_requests) {
  ConversationShape shape;
  shape.concurrency = concurrency;
  shape.max_requests = max_requests;
  shape.request_timeout_seconds = 10;
  return shape;
}

TEST(RunConversations, EachTurnCarriesTheHistoryWithTheServersEarlierReplies) {
  FakeChatServer server;
  const std::vector<Conversation> conversations = {conversation("ann", 3)};
  const ConversationRun run =
      run_conversations(chat_endpoint(server), conversations, shape_of(1, 3), {"m", 7, {{"seed", 1}}}, {});

  const std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  // The fake answers "You said: " + the last message, so the history each
  // turn must carry is written out here in full.
  const json system = message("system", "You are ann's helper.");
  const json q0 = message("user", "ann asks question 0"), q1 = message("user", "ann asks question 1"),
             q2 = message("user", "ann asks question 2");
  const json a0 = message("assistant", "You said: ann asks question 0");
  const json a1 = message("assistant", "You said: ann asks question 1");
  EXPECT_EQ(requests[0]["messages"], json::array({system, q0}));
  EXPECT_EQ(requests[1]["messages"], json::array({system, q0, a0, q1}));
  EXPECT_EQ(requests[2]["messages"], json::array({system, q0, a0, q1, a1, q2}));
  for (const json& request : requests) {
    EXPECT_EQ(request["model"], "m");
    EXPECT_EQ(request["max_tokens"], 7);
    EXPECT_EQ(request["seed"], 1);
    EXPECT_EQ(request["stream"], true);
    EXPECT_EQ(request["stream_options"], (json{{"include_usage", true}}));
  }

  ASSERT_EQ(run.records.size(), 3u);
  for (size_t t = 0; t < 3; ++t) {
    const RequestRecord& record = run.records[t];
    SCOPED_TRACE(t);
    ASSERT_TRUE(record.ok) << record.error;
    EXPECT_EQ(record.status, 200);
    EXPECT_EQ(record.text, "You said: ann asks question " + std::to_string(t));
    // The fake's usage, which no count of chunks gives.
    EXPECT_EQ(record.output_tokens, FakeChatServer::completion_tokens_for(requests[t]));
    EXPECT_EQ(record.prompt_tokens, FakeChatServer::prompt_tokens_for(requests[t]));
  }
  ASSERT_EQ(run.conversations.size(), 1u);
  EXPECT_EQ(run.conversations[0].turns, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(run.conversations[0].finished);

  const std::vector<ConversationTotals> totals = conversation_totals(run, conversations);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].where, "ann");
  EXPECT_EQ(totals[0].turns, 3u);
  EXPECT_EQ(totals[0].completed, 3u);
  EXPECT_EQ(totals[0].failed, 0u);
  long output = 0;
  for (const json& request : requests) output += FakeChatServer::completion_tokens_for(request);
  EXPECT_EQ(totals[0].output_tokens, output);
  EXPECT_GT(totals[0].seconds, 0);
}

TEST(RunConversations, RecordedHistoryCarriesTheFilesReplies) {
  FakeChatServer server;
  ConversationShape shape = shape_of(1, 2);
  shape.history = History::recorded;
  const std::vector<Conversation> conversations = {conversation("bo", 2, /*with_system=*/false)};
  const ConversationRun run = run_conversations(chat_endpoint(server), conversations, shape, {}, {});
  const std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1]["messages"],
            json::array({message("user", "bo asks question 0"),
                         message("assistant", "recorded answer 0 of bo"),
                         message("user", "bo asks question 1")}));
  EXPECT_EQ(requests[1]["max_tokens"], 64);  // ChatBodySpec's default
  ASSERT_EQ(run.records.size(), 2u);
  EXPECT_TRUE(run.records[1].ok) << run.records[1].error;
}

TEST(RunConversations, ConversationsOwnMaxTokensWins) {
  FakeChatServer server;
  std::vector<Conversation> conversations = {conversation("cy", 1)};
  conversations[0].max_tokens = 3;
  run_conversations(chat_endpoint(server), conversations, shape_of(1, 1), {"", 50, nullptr}, {});
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0]["max_tokens"], 3);
}

TEST(RunConversations, MaxTurnsCutsEveryConversationAndTheyCycle) {
  FakeChatServer server;
  ConversationShape shape = shape_of(1, 5);
  shape.max_turns = 2;
  const std::vector<Conversation> conversations = {conversation("a", 4), conversation("b", 1)};
  const ConversationRun run = run_conversations(chat_endpoint(server), conversations, shape, {}, {});
  // a: 2 turns, b: 1 turn, a again: 2 turns = 5 requests.
  ASSERT_EQ(run.records.size(), 5u);
  ASSERT_EQ(run.conversations.size(), 3u);
  EXPECT_EQ(run.conversations[0].conversation, 0u);
  EXPECT_EQ(run.conversations[0].turns.size(), 2u);
  EXPECT_TRUE(run.conversations[0].finished);
  EXPECT_EQ(run.conversations[1].conversation, 1u);
  EXPECT_EQ(run.conversations[1].turns.size(), 1u);
  EXPECT_EQ(run.conversations[2].conversation, 0u);
  const std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[2]["messages"].back(), message("user", "b asks question 0"));
  // The second replay of a starts afresh: system prompt and its first question.
  EXPECT_EQ(requests[3]["messages"].size(), 2u);
}

TEST(RunConversations, RequestCountStopsARunMidConversation) {
  FakeChatServer server;
  const std::vector<Conversation> conversations = {conversation("a", 3), conversation("b", 3)};
  std::vector<std::pair<size_t, size_t>> progress;
  const ConversationRun run = run_conversations(
      chat_endpoint(server), conversations, shape_of(1, 4), {},
      [&](size_t done, size_t total) { progress.emplace_back(done, total); });
  ASSERT_EQ(run.records.size(), 4u);
  EXPECT_EQ(server.requests().size(), 4u);
  ASSERT_EQ(run.conversations.size(), 2u);
  EXPECT_TRUE(run.conversations[0].finished);
  EXPECT_EQ(run.conversations[1].turns.size(), 1u);
  EXPECT_FALSE(run.conversations[1].finished);  // cut short by the bound
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.back(), (std::pair<size_t, size_t>{4, 4}));
}

TEST(RunConversations, DurationStopsARunAndCancelsTurnsInFlight) {
  FakeChatServer::Options options;
  options.chunk_delay = std::chrono::milliseconds(40);
  FakeChatServer server(options);
  // Long questions: each reply takes 40 ms a word, far beyond the bound.
  Conversation talkative = conversation("d", 5);
  for (ConversationTurn& turn : talkative.turns)
    turn.said[0].content += " and so on and so on and so on and so on and so on and so on";
  ConversationShape shape = shape_of(2, 0);
  shape.max_seconds = 0.3;
  const auto began = std::chrono::steady_clock::now();
  const ConversationRun run = run_conversations(chat_endpoint(server), {talkative}, shape, {}, {});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_LT(wall, 2.0);
  EXPECT_GE(run.duration_seconds, 0.3);
  EXPECT_LT(run.duration_seconds, 0.8);
  ASSERT_EQ(run.records.size(), 2u);  // two users, each stuck in its first turn
  for (const RequestRecord& record : run.records) {
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, kCancelledAtEnd);
    EXPECT_FALSE(record.text.empty());  // some words had arrived
  }
  const RunSummary summary = summarize(run.records, run.duration_seconds, {});
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.completed, 0u);
}

TEST(RunConversations, AFailedTurnIsAFailureAndEndsItsConversation) {
  FakeChatServer::Options options;
  options.status_for = [](const json& body) {
    return body["messages"].back()["content"] == "e asks question 1" ? 503 : 200;
  };
  FakeChatServer server(options);
  const std::vector<Conversation> conversations = {conversation("e", 3), conversation("f", 2)};
  const ConversationRun run = run_conversations(chat_endpoint(server), conversations, shape_of(1, 4), {}, {});
  // e: turn 0 ok, turn 1 fails, turn 2 never sent; f: both turns.
  ASSERT_EQ(run.records.size(), 4u);
  EXPECT_TRUE(run.records[0].ok);
  EXPECT_FALSE(run.records[1].ok);
  EXPECT_EQ(run.records[1].status, 503);
  EXPECT_EQ(run.records[1].error, FakeChatServer::kFailureMessage);
  EXPECT_TRUE(run.records[2].ok);
  EXPECT_TRUE(run.records[3].ok);
  EXPECT_EQ(server.requests()[2]["messages"].back(), message("user", "f asks question 0"));

  const RunSummary summary = summarize(run.records, 1.0, {});
  EXPECT_EQ(summary.completed, 3u);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.errors_by_status.at(503), 1u);
  const std::vector<ConversationTotals> totals = conversation_totals(run, conversations);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].turns, 2u);
  EXPECT_EQ(totals[0].completed, 1u);
  EXPECT_EQ(totals[0].failed, 1u);
  EXPECT_FALSE(totals[0].finished);
  EXPECT_TRUE(totals[1].finished);
}

TEST(RunConversations, NoServerMeansFailedTurnsNotAHang) {
  boost::asio::io_context context;
  boost::asio::ip::tcp::acceptor acceptor(
      context, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const int port = acceptor.local_endpoint().port();
  acceptor.close();  // nothing listens there now
  const ConversationRun run = run_conversations(
      parse_url("http://127.0.0.1:" + std::to_string(port), default_path(Api::chat)),
      {conversation("g", 3)}, shape_of(2, 6), {}, {});
  // Each failed first turn ends its conversation; users take the next until 6 are sent.
  ASSERT_EQ(run.records.size(), 6u);
  for (const RequestRecord& record : run.records) {
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.status, 0);
  }
  EXPECT_EQ(run.conversations.size(), 6u);
}

TEST(RunConversations, ConcurrentUsersKeepTheirOwnHistories) {
  FakeChatServer::Options options;
  options.chunk_delay = std::chrono::milliseconds(2);
  FakeChatServer server(options);
  std::vector<Conversation> conversations;
  for (const char* name : {"p", "q", "r", "s"}) conversations.push_back(conversation(name, 3));
  const ConversationRun run = run_conversations(chat_endpoint(server), conversations, shape_of(3, 12), {}, {});
  ASSERT_EQ(run.records.size(), 12u);
  for (const RequestRecord& record : run.records) EXPECT_TRUE(record.ok) << record.error;
  // Every request, whatever interleaving the users had: each assistant
  // message answers the user message just before it, and every user message
  // in it comes from the same conversation.
  for (const json& request : server.requests()) {
    const json& messages = request["messages"];
    const std::string owner = messages[0]["content"].get<std::string>().substr(8, 1);  // "You are X's"
    for (size_t i = 1; i < messages.size(); ++i) {
      const std::string content = messages[i]["content"];
      if (messages[i]["role"] == "assistant") {
        EXPECT_EQ(content, "You said: " + messages[i - 1]["content"].get<std::string>());
      } else {
        EXPECT_EQ(content.substr(0, 1), owner) << request.dump();
      }
    }
  }
}

TEST(RunConversations, BadShapesAreRefused) {
  const Endpoint endpoint = parse_url("http://127.0.0.1:1", default_path(Api::chat));
  test_support::expect_invalid([&] { run_conversations(endpoint, {}, shape_of(1, 1), {}, {}); },
                               "no conversations");
  test_support::expect_invalid(
      [&] { run_conversations(endpoint, {conversation("x", 1)}, shape_of(1, 0), {}, {}); }, "bound");
  test_support::expect_invalid(
      [&] { run_conversations(endpoint, {conversation("x", 1)}, shape_of(0, 1), {}, {}); }, "concurrency");
  ConversationShape negative = shape_of(1, 1);
  negative.max_turns = -1;
  test_support::expect_invalid(
      [&] { run_conversations(endpoint, {conversation("x", 1)}, negative, {}, {}); }, "--max-turns");
  test_support::expect_invalid(
      [&] { run_conversations(endpoint, {conversation("x", 1)}, shape_of(1, 1), {"", 5, json::array()}, {}); },
      "overrides must be a JSON object");
  test_support::expect_invalid([] { parse_history("replayed"); }, "--history");
}

// ---- single-turn chat through run_load (--endpoint chat without --conversations) ----

TEST(RunLoadChat, TtftIsTheFirstContentChunkAndTokensComeFromUsage) {
  FakeChatServer::Options options;
  options.chunk_delay = std::chrono::milliseconds(60);  // the role chunk goes out at once
  FakeChatServer server(options);
  WorkItem item;
  item.prompt = "one two three";
  item.max_tokens = 9;
  item.extra = {{"temperature", 0}};
  LoadShape shape;
  shape.max_requests = 2;
  double duration = 0;
  const std::vector<RequestRecord> records =
      run_load(chat_endpoint(server), {chat_request_body(item, "", nullptr)}, shape, {}, duration);
  ASSERT_EQ(records.size(), 2u);
  const std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0]["messages"], json::array({message("user", "one two three")}));
  EXPECT_EQ(requests[0]["stream_options"], (json{{"include_usage", true}}));
  EXPECT_EQ(requests[0]["temperature"], 0);
  for (const RequestRecord& record : records) {
    ASSERT_TRUE(record.ok) << record.error;
    EXPECT_EQ(record.text, "You said: one two three");
    // Had the role chunk counted, TTFT would be about 0. (Lower bounds only:
    // a busy machine can delay a chunk, never hurry one.)
    EXPECT_GE(record.ttft, 0.055);
    ASSERT_EQ(record.itl.size(), 4u);  // 5 content chunks
    double last_content = record.ttft;
    for (double gap : record.itl) {
      EXPECT_GE(gap, 0);
      last_content += gap;
    }
    EXPECT_GE(last_content, 5 * 0.055);  // the fifth content chunk left 5 delays after the request
    EXPECT_EQ(record.output_tokens, 1005);
    EXPECT_EQ(record.prompt_tokens, 13);
  }
}

}  // namespace
}  // namespace tandem::loadtest
