#include "coordinator/chat/chat_reply.h"

namespace tandem::chat {

using api::OrderedJson;

std::string chat_finish_reason(std::string_view engine_reason, bool found_calls) {
  return found_calls ? "tool_calls" : std::string(engine_reason);
}

OrderedJson chat_reply_choice(std::string_view text, ToolCallFormat format,
                              std::string_view engine_finish_reason, int index) {
  ParsedOutput output = parse_tool_calls(text, format);
  OrderedJson calls = OrderedJson::array();
  for (const ToolCall& call : output.calls) calls.push_back(tool_call_object(call, new_tool_call_id()));
  std::optional<std::string> content = std::move(output.content);
  if (!output.calls.empty() && content->empty()) content.reset();  // OpenAI sends null then
  return chat_choice_object(index, content, calls,
                            chat_finish_reason(engine_finish_reason, !output.calls.empty()));
}

std::string chat_reply_json(const ChatHeader& header, std::string_view text, ToolCallFormat format,
                            const ReplyEnd& end) {
  return chat_completion_json(
      header, OrderedJson::array({chat_reply_choice(text, format, end.finish_reason, 0)}), end.usage,
      end.speculation);
}

std::string ChatChunker::chunk(const OrderedJson& delta) const {
  return chat_chunk_json(header_, delta, std::nullopt, include_usage_, index_);
}

std::vector<std::string> ChatChunker::opening() {
  return {chunk(OrderedJson{{"role", "assistant"}, {"content", ""}})};
}

std::vector<std::string> ChatChunker::text(std::string_view piece) { return events_for(filter_.push(piece)); }

std::vector<std::string> ChatChunker::finish(const ReplyEnd& end) {
  std::vector<std::string> events = events_for(filter_.finish());
  events.push_back(chat_chunk_json(header_, OrderedJson::object(),
                                   chat_finish_reason(end.finish_reason, filter_.found_calls()),
                                   include_usage_, index_));
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
