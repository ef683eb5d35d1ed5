// run_conversations: replays multi-turn conversations (conversation.h)
// against a /v1/chat/completions endpoint, each as one simulated user.
//
// `concurrency` users run at once (a closed loop of conversations). A user
// takes the next conversation (in file order, cycling), sends its first turn
// with the preamble, waits for the whole reply, then sends the next turn with
// the whole history so far, and so on. The assistant message put into the
// history is, by default, the server's actual reply (History::live): the
// next request then carries what this server really said, as a real chat
// client's would, and the prompt lengths follow the server's answers.
// History::recorded puts the file's recorded reply there instead, so every
// run sends the same prompts whatever the server answers (a turn without a
// recorded reply is the conversation's last, so nothing needs one).
//
// Each turn is one request and one RequestRecord. A failed turn ends its
// conversation (its user leaves; the next turn would need the reply). A run
// ends when max_requests turns have been sent and answered, or at
// max_seconds, when turns in flight are cancelled and recorded as failed
// (kCancelledAtEnd); at least one bound is required. Everything runs on the
// calling thread's own io_context.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/loadtest/completion_client.h"
#include "tools/loadtest/conversation.h"
#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

enum class History { live, recorded };

// "live" or "recorded"; Error (invalid_argument) naming --history otherwise.
History parse_history(const std::string& name);

struct ConversationShape {
  int concurrency = 1;        // simulated users at once (>= 1)
  size_t max_requests = 0;    // turns in all; 0 = no bound on the count
  double max_seconds = 0;     // 0 = no bound on the time
  int max_turns = 0;          // turns sent per conversation at most; 0 = all of them
  History history = History::live;
  double request_timeout_seconds = 300;  // one turn, connect to end of stream
};

// What every turn's body carries besides the messages: the conversation's
// own max_tokens wins over max_tokens here; overrides as in request_body.
struct ChatBodySpec {
  std::string model;
  int max_tokens = 64;
  nlohmann::json overrides = nlohmann::json::object();
};

// One conversation as a user replayed it.
struct ConversationRecord {
  size_t conversation = 0;    // its index in the list given
  std::vector<size_t> turns;  // indices of its turns' records, in order
  bool finished = false;      // every turn it was to send was answered
};

struct ConversationRun {
  std::vector<RequestRecord> records;              // every turn, in send order
  std::vector<ConversationRecord> conversations;  // in the order they started
  double duration_seconds = 0;  // from the run's start to the end of its last turn
};

// progress(done, total) is called as each turn ends (total = max_requests).
// Error (invalid_argument) for no conversations, concurrency < 1, max_turns
// < 0, no bound, or overrides that are not an object.
ConversationRun run_conversations(const Endpoint& endpoint,
                                  const std::vector<Conversation>& conversations,
                                  const ConversationShape& shape, const ChatBodySpec& body,
                                  std::function<void(size_t done, size_t total)> progress);

// Per conversation replayed: its turns, how many were answered, tokens, and
// seconds from its first turn's start to its last turn's end.
struct ConversationTotals {
  std::string where;  // the conversation's file:line
  size_t turns = 0, completed = 0, failed = 0;
  long prompt_tokens = 0, output_tokens = 0;
  double seconds = 0;
  bool finished = false;
};
std::vector<ConversationTotals> conversation_totals(const ConversationRun& run,
                                                    const std::vector<Conversation>& conversations);

}  // namespace tandem::loadtest
