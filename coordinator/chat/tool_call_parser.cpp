#include "coordinator/chat/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace tandem::chat {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kSpace = " \t\n\r\f\v";

// The length of the longest end of `text` that is a proper beginning of
// `tag`: text that may still turn into the tag once more arrives.
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
  for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length) {
    if (tag.starts_with(text.substr(text.size() - length))) return length;
  }
  return 0;
}

std::string dump(const OrderedJson& value) {
  return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace

ToolCallFormat tool_call_format_of(std::string_view template_source) {
  if (template_source.find(kOpen) != std::string_view::npos) return ToolCallFormat::hermes;
  if (template_source.find(kPythonTag) != std::string_view::npos ||
      template_source.find("\"parameters\"") != std::string_view::npos)
    return ToolCallFormat::llama3_json;
  return ToolCallFormat::none;
}

std::optional<ToolCall> parse_call_json(std::string_view json) {
  const OrderedJson value = OrderedJson::parse(json.begin(), json.end(), nullptr, false);
  if (!value.is_object()) return std::nullopt;  // includes a parse failure (discarded)
  const auto name = value.find("name");
  if (name == value.end() || !name->is_string() || name->get<std::string>().empty())
    return std::nullopt;
  auto arguments = value.find("arguments");
  if (arguments == value.end()) arguments = value.find("parameters");
  ToolCall call{name->get<std::string>(), "{}"};
  if (arguments == value.end() || arguments->is_null()) return call;
  if (arguments->is_object()) {
    call.arguments = dump(*arguments);
  } else if (arguments->is_string() &&
             OrderedJson::parse(arguments->get<std::string>(), nullptr, false).is_object()) {
    call.arguments = arguments->get<std::string>();  // already JSON text
  } else {
    return std::nullopt;
  }
  return call;
}

void ToolCallFilter::emit_text(std::string_view text, FilteredPiece& out) {
  if (after_call_) {
    const size_t first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    after_call_ = false;
  }
  const size_t last = text.find_last_not_of(kSpace);
  if (last == std::string_view::npos) {
    spaces_ += text;
    return;
  }
  out.content += spaces_;
  out.content += text.substr(0, last + 1);
  spaces_ = std::string(text.substr(last + 1));
}

FilteredPiece ToolCallFilter::drain(bool at_end) {
  FilteredPiece out;
  if (format_ == ToolCallFormat::hermes) {
    while (!held_.empty()) {
      const size_t open = held_.find(kOpen);
      if (open == std::string::npos) {
        const size_t keep = at_end ? 0 : partial_tag_at_end(held_, kOpen);
        emit_text(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
        break;
      }
      emit_text(std::string_view(held_).substr(0, open), out);
      held_.erase(0, open);
      const size_t close = held_.find(kClose);
      if (close == std::string::npos) {
        if (at_end) {  // unterminated: the text stays content
          emit_text(held_, out);
          held_.clear();
        }
        break;
      }
      const size_t block_end = close + kClose.size();
      const std::string_view inner = std::string_view(held_).substr(kOpen.size(), close - kOpen.size());
      if (std::optional<ToolCall> call = parse_call_json(inner)) {
        spaces_.clear();  // whitespace before a call is dropped
        out.calls.push_back(std::move(*call));
        found_calls_ = after_call_ = true;
      } else {
        emit_text(std::string_view(held_).substr(0, block_end), out);
      }
      held_.erase(0, block_end);
    }
  } else if (format_ == ToolCallFormat::llama3_json) {
    if (!started_) {
      const size_t first = held_.find_first_not_of(kSpace);
      if (first != std::string::npos) {
        const std::string_view rest = std::string_view(held_).substr(first);
        const bool maybe_tag = rest.size() < kPythonTag.size() && kPythonTag.starts_with(rest);
        if (!maybe_tag || at_end) {
          started_ = true;
          whole_message_ = rest.starts_with("{") || rest.starts_with(kPythonTag);
        }
      }
    }
    if (started_ && !whole_message_) {
      out.content = std::move(held_);
      held_.clear();
    } else if (at_end) {
      std::string_view body = held_;
      const size_t first = body.find_first_not_of(kSpace);
      body.remove_prefix(first == std::string_view::npos ? body.size() : first);
      if (body.starts_with(kPythonTag)) body.remove_prefix(kPythonTag.size());
      if (std::optional<ToolCall> call = parse_call_json(body)) {
        out.calls.push_back(std::move(*call));
        found_calls_ = true;
      } else {
        out.content = std::move(held_);
      }
      held_.clear();
    }
  } else {
    out.content = std::move(held_);
    held_.clear();
  }
  return out;
}

FilteredPiece ToolCallFilter::push(std::string_view text) {
  held_ += text;
  return drain(false);
}

FilteredPiece ToolCallFilter::finish() {
  FilteredPiece out = drain(true);
  if (!found_calls_) out.content += spaces_;  // trailing whitespace of plain text is kept
  spaces_.clear();
  return out;
}

ParsedOutput parse_tool_calls(std::string_view text, ToolCallFormat format) {
  ToolCallFilter filter(format);
  FilteredPiece first = filter.push(text);
  FilteredPiece last = filter.finish();
  ParsedOutput parsed{std::move(first.content) + last.content, std::move(first.calls)};
  for (ToolCall& call : last.calls) parsed.calls.push_back(std::move(call));
  return parsed;
}

}  // namespace tandem::chat
