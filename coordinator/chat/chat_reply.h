// A chat reply from the model's output text: the whole chat.completion, or
// the chunks of a streamed one (ChatChunker), tool calls taken out in the
// template's format when the request offers tools. Both go through the same
// ToolCallFilter, so a stream's deltas always add up to the whole reply.
// The server's chat route is a thin adapter over these (it owns the HTTP and
// the engine's end-of-job report); here they are testable on literal text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coordinator/api/token_logprobs.h"
#include "coordinator/chat/chat_response.h"

namespace tandem::chat {

// How the output ended, as the engine reports it.
struct ReplyEnd {
  std::string finish_reason;  // the engine's: stop | length | ...
  api::Usage usage;
  api::SpeculationReport speculation;
};

// A stop, or a length end after a call was complete, is reported as the
// tool calls the client has to answer.
std::string chat_finish_reason(std::string_view engine_reason, bool found_calls);

// The whole chat.completion for `text`; `logprobs` those of its tokens, or
// null when not asked for (with tools, the entries of the tokens that wrote
// a call are among them: the model generated them).
std::string chat_reply_json(const ChatHeader& header, std::string_view text, ToolCallFormat format,
                            const ReplyEnd& end, const api::OrderedJson& logprobs = nullptr);

// One choice of a chat.completion for `text` (the choice at `index`), its
// tool calls parsed on its own text.
api::OrderedJson chat_reply_choice(std::string_view text, ToolCallFormat format,
                                   std::string_view engine_finish_reason, int index,
                                   const api::OrderedJson& logprobs = nullptr);

// The chunk payloads of a streamed reply: the assistant's role first, then
// content deltas as the tool-call filter lets text out, each complete call as
// one tool_calls delta (with its index), then the finish and, with
// include_usage, the usage chunk. With logprobs, each token's entry goes in
// the first chunk sent once its text has arrived (text the tool-call filter
// holds back carries its entries on to the chunk that lets it out, or to the
// finish), so the chunks' entries add up to the whole reply's. Not
// thread-safe: one per stream, or one per choice (`index`) of a stream with
// several.
class ChatChunker {
 public:
  ChatChunker(ChatHeader header, ToolCallFormat format, bool include_usage, int index = 0,
              bool logprobs = false)
      : header_(std::move(header)), filter_(format), include_usage_(include_usage), index_(index),
        logprobs_(logprobs) {}

  std::vector<std::string> opening();
  std::vector<std::string> text(std::string_view piece,
                                std::vector<api::LogprobEntry> logprobs = {});
  // finish(), then the usage chunk when include_usage.
  std::vector<std::string> end(const ReplyEnd& end);
  // The text held back, then the chunk with the finish_reason (no usage:
  // with several choices the route sends one usage chunk for all).
  std::vector<std::string> finish(const ReplyEnd& end);

 private:
  std::string chunk(const api::OrderedJson& delta);
  // The entries waiting to go, as the chunk's "logprobs" (null when not asked for).
  api::OrderedJson take_logprobs();
  std::vector<std::string> events_for(const FilteredPiece& piece);

  ChatHeader header_;
  ToolCallFilter filter_;
  bool include_usage_;
  int index_;
  bool logprobs_;
  std::vector<api::LogprobEntry> pending_logprobs_;
  int calls_sent_ = 0;
};

}  // namespace tandem::chat
