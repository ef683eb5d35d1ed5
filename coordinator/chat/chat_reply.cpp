#include "coordinator/chat/chat_reply.h"

#include <iterator>

namespace tandem::chat {

using api::OrderedJson;

std::string chat_finish_reason(std::string_view engine_reason, bool found_calls) {
  return found_calls ? "tool_calls" : std::string(engine_reason);
}

OrderedJson chat_reply_choice(std::string_view text, ToolCallFormat format,
                              std::string_view engine_finish_reason, int index,
                              const OrderedJson& logprobs) {
  ParsedOutput output = parse_tool_calls(text, format);
  OrderedJson calls = OrderedJson::array();
  for (const ToolCall& call : output.calls) calls.push_back(tool_call_object(call, new_tool_call_id()));
  std::optional<std::string> content = std::move(output.content);
  if (!output.calls.empty() && content->empty()) content.reset();  // OpenAI sends null then
  return chat_choice_object(index, content, calls,
                            chat_finish_reason(engine_finish_reason, !output.calls.empty()),
                            logprobs);
}

std::string chat_reply_json(const ChatHeader& header, std::string_view text, ToolCallFormat format,
                            const ReplyEnd& end, const OrderedJson& logprobs) {
  return chat_completion_json(
      header, OrderedJson::array({chat_reply_choice(text, format, end.finish_reason, 0, logprobs)}),
      end.usage, end.speculation);
}

std::string ChatChunker::chunk(const OrderedJson& delta) {
  return chat_chunk_json(header_, delta, std::nullopt, include_usage_, index_, take_logprobs());
}

OrderedJson ChatChunker::take_logprobs() {
  if (!logprobs_) return nullptr;
  OrderedJson shown = api::chat_logprobs_json(pending_logprobs_);
  pending_logprobs_.clear();
  return shown;
}

std::vector<std::string> ChatChunker::opening() {
  return {chunk(OrderedJson{{"role", "assistant"}, {"content", ""}})};
}

std::vector<std::string> ChatChunker::text(std::string_view piece,
                                           std::vector<api::LogprobEntry> logprobs) {
  pending_logprobs_.insert(pending_logprobs_.end(), std::make_move_iterator(logprobs.begin()),
                           std::make_move_iterator(logprobs.end()));
  return events_for(filter_.push(piece));
}

std::vector<std::string> ChatChunker::finish(const ReplyEnd& end) {
  std::vector<std::string> events = events_for(filter_.finish());
  events.push_back(chat_chunk_json(header_, OrderedJson::object(),
                                   chat_finish_reason(end.finish_reason, filter_.found_calls()),
                                   include_usage_, index_, take_logprobs()));
  return events;
}

std::vector<std::string> ChatChunker::end(const ReplyEnd& end) {
  std::vector<std::string> events = finish(end);
  if (include_usage_) events.push_back(chat_usage_chunk_json(header_, end.usage, end.speculation));
  return events;
}

std::vector<std::string> ChatChunker::events_for(const FilteredPiece& piece) {
  std::vector<std::string> events;
  if (!piece.content.empty()) events.push_back(chunk(OrderedJson{{"content", piece.content}}));
  for (const ToolCall& call : piece.calls) {
    OrderedJson calls = OrderedJson::array({tool_call_object(call, new_tool_call_id(), calls_sent_++)});
    events.push_back(chunk(OrderedJson{{"tool_calls", std::move(calls)}}));
  }
  return events;
}

}  // namespace tandem::chat
