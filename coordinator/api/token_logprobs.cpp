#include "coordinator/api/token_logprobs.h"

#include <cstdint>

namespace tandem::api {
namespace {

// Length of the valid UTF-8 sequence starting at text[at], 0 if none is.
std::size_t valid_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, code = lead & 0x07;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  if (overlong || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return length;
}

OrderedJson byte_list(std::string_view bytes) {
  OrderedJson list = OrderedJson::array();
  for (const char c : bytes) list.push_back(static_cast<int>(static_cast<uint8_t>(c)));
  return list;
}

OrderedJson number_or_null(const std::optional<double>& value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

}  // namespace

std::string token_string(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t at = 0; at < bytes.size();) {
    if (const std::size_t length = valid_sequence_length(bytes, at); length > 0) {
      out.append(bytes.substr(at, length));
      at += length;
      continue;
    }
    const auto byte = static_cast<uint8_t>(bytes[at++]);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

OrderedJson completion_logprobs_json(const std::vector<LogprobEntry>& entries) {
  OrderedJson tokens = OrderedJson::array(), logprobs = OrderedJson::array();
  OrderedJson tops = OrderedJson::array(), offsets = OrderedJson::array();
  for (const LogprobEntry& entry : entries) {
    tokens.push_back(token_string(entry.token));
    logprobs.push_back(number_or_null(entry.logprob));
    if (!entry.logprob) {
      tops.push_back(nullptr);
    } else {
      OrderedJson top = OrderedJson::object();
      for (const auto& [bytes, logprob] : entry.top) {
        const std::string key = token_string(bytes);
        if (!top.contains(key)) top[key] = logprob;  // the likelier one came first
      }
      tops.push_back(std::move(top));
    }
    offsets.push_back(entry.text_offset);
  }
  OrderedJson out;
  out["tokens"] = std::move(tokens);
  out["token_logprobs"] = std::move(logprobs);
  out["top_logprobs"] = std::move(tops);
  out["text_offset"] = std::move(offsets);
  return out;
}

OrderedJson chat_logprobs_json(const std::vector<LogprobEntry>& entries) {
  OrderedJson content = OrderedJson::array();
  for (const LogprobEntry& entry : entries) {
    OrderedJson one;
    one["token"] = token_string(entry.token);
    one["logprob"] = number_or_null(entry.logprob);
    one["bytes"] = byte_list(entry.token);
    OrderedJson top = OrderedJson::array();
    for (const auto& [bytes, logprob] : entry.top) {
      top.push_back({{"token", token_string(bytes)}, {"logprob", logprob}, {"bytes", byte_list(bytes)}});
    }
    one["top_logprobs"] = std::move(top);
    content.push_back(std::move(one));
  }
  OrderedJson out;
  out["content"] = std::move(content);
  out["refusal"] = nullptr;
  return out;
}

double sum_logprobs(const std::vector<LogprobEntry>& entries) {
  double sum = 0;
  for (const LogprobEntry& entry : entries) sum += entry.logprob.value_or(0.0);
  return sum;
}

}  // namespace tandem::api
