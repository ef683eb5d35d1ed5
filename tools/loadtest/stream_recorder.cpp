#include "tools/loadtest/stream_recorder.h"

namespace tandem::loadtest {

using nlohmann::json;

std::string error_message_in(const json& body) {
  if (!body.is_object()) return "";
  if (body.contains("error")) {
    const json& error = body["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string())
      return error["message"].get<std::string>();
    if (error.is_string()) return error.get<std::string>();
    return error.dump();
  }
  if (body.value("object", "") == "error" && body.contains("message") && body["message"].is_string())
    return body["message"].get<std::string>();
  return "";
}

void StreamRecorder::feed(std::string_view bytes, double elapsed) {
  pending_.append(bytes);
  size_t begin = 0;
  for (size_t end; (end = pending_.find('\n', begin)) != std::string::npos; begin = end + 1) {
    std::string_view line(pending_.data() + begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    take_line(line, elapsed);
  }
  pending_.erase(0, begin);
}

void StreamRecorder::end_of_body(double elapsed) {
  if (!pending_.empty()) {
    std::string_view line(pending_);
    if (line.back() == '\r') line.remove_suffix(1);
    take_line(line, elapsed);
    pending_.clear();
  }
  if (has_data_) take_event(elapsed);
}

void StreamRecorder::take_line(std::string_view line, double elapsed) {
  if (line.empty()) {  // a blank line ends an event
    if (has_data_) take_event(elapsed);
    return;
  }
  if (line.front() == ':') return;  // an SSE comment (keep-alive pings)
  const std::string_view field = "data:";
  if (line.substr(0, field.size()) != field) return;  // event:, id:, retry: carry nothing here
  line.remove_prefix(field.size());
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(line);
  has_data_ = true;
}

void StreamRecorder::take_event(double elapsed) {
  const std::string payload = std::move(data_);
  data_.clear();
  has_data_ = false;
  if (saw_done()) return;  // nothing after [DONE] counts
  if (payload == "[DONE]") {
    done_at_ = elapsed;
    return;
  }
  const json event = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded()) {
    if (error_.empty()) error_ = "the server sent an event that is not JSON: " + payload.substr(0, 200);
    return;
  }
  if (std::string error = error_message_in(event); !error.empty()) {
    if (error_.empty()) error_ = error;
    return;
  }
  if (event.contains("choices") && event["choices"].is_array() && !event["choices"].empty()) {
    const json& choice = event["choices"][0];
    // A completion chunk's text, or a chat chunk's delta.content; the chat
    // stream's first chunk carries only delta.role, which is not a token.
    const json* piece = nullptr;
    if (choice.contains("text")) {
      piece = &choice["text"];
    } else if (choice.contains("delta") && choice["delta"].is_object() &&
               choice["delta"].contains("content")) {
      piece = &choice["delta"]["content"];
    }
    if (piece != nullptr && piece->is_string()) {
      const std::string& text = piece->get_ref<const std::string&>();
      if (!text.empty()) {
        if (first_text_at_ < 0) {
          first_text_at_ = elapsed;
          seen_.ttft = elapsed;
        } else {
          seen_.itl.push_back(elapsed - last_text_at_);
        }
        last_text_at_ = elapsed;
        seen_.text += text;
        ++text_events_;
      }
    }
  }
  if (event.contains("usage") && event["usage"].is_object()) {
    const json& usage = event["usage"];
    seen_.prompt_tokens = usage.value("prompt_tokens", 0);
    seen_.output_tokens = usage.value("completion_tokens", 0);
    // OpenAI sends the details as null when it has none to give.
    const auto details = usage.find("prompt_tokens_details");
    if (details != usage.end() && details->is_object())
      seen_.cached_tokens = details->value("cached_tokens", 0);
    has_usage_ = true;
  }
}

void StreamRecorder::fill(RequestRecord& record, double end_elapsed) const {
  record.ttft = seen_.ttft;
  record.itl = seen_.itl;
  record.text = seen_.text;
  record.prompt_tokens = seen_.prompt_tokens;
  record.cached_tokens = seen_.cached_tokens;
  record.output_tokens = has_usage_ ? seen_.output_tokens : text_events_;
  record.latency = saw_done() ? done_at_ : end_elapsed;
}

}  // namespace tandem::loadtest
