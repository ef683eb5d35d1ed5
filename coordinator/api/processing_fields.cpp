#include "coordinator/api/processing_fields.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace tandem::api {
namespace {

// A number in [low, high] (low excluded when open_low), as the engine's float.
float read_bounded(const Json& value, std::string_view field, double low, bool open_low,
                   double high) {
  const double number = read_number(value, field);
  if (number < low || (open_low && number == low) || number > high) {
    throw invalid_value(field, "Expected a value in " + std::string(open_low ? "(" : "[") +
                                   describe_number(Json(low)) + ", " + describe_number(Json(high)) +
                                   "], but got " + describe_number(value) + " instead.");
  }
  return as_engine_float(number, value, field);
}

// "123": a token id written in decimal, below the vocabulary size.
int32_t token_id_key(const std::string& key, const RequestLimits& limits) {
  const bool digits = !key.empty() && key.size() <= 10 &&
                      std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isdigit(c); });
  const int64_t id = digits ? std::stoll(key) : -1;
  if (id < 0 || id >= limits.vocab_size) {
    throw invalid_value("logit_bias", "keys must be token ids in [0, " + std::to_string(limits.vocab_size) +
                                          ") written as decimal strings, but got \"" + key + "\".");
  }
  return static_cast<int32_t>(id);
}

}  // namespace

void read_presence_penalty(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.processing.presence_penalty = read_bounded(value, "presence_penalty", -2.0, false, 2.0);
}

void read_frequency_penalty(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.processing.frequency_penalty = read_bounded(value, "frequency_penalty", -2.0, false, 2.0);
}

void read_repetition_penalty(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.processing.repetition_penalty =
      read_bounded(value, "repetition_penalty", 0.0, true, kMaxRepetitionPenalty);
}

void read_logit_bias(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  const Json::object_t& entries = read_object(value, "logit_bias");
  if (entries.size() > kMaxLogitBiasEntries) {
    throw invalid_value("logit_bias", "at most " + std::to_string(kMaxLogitBiasEntries) +
                                          " entries are allowed, but got " +
                                          std::to_string(entries.size()) + ".");
  }
  LogitProcessing& p = request.processing;
  p.bias_tokens.clear();
  p.bias_values.clear();
  for (const auto& [key, bias] : entries) {
    p.bias_tokens.push_back(token_id_key(key, limits));
    if (!bias.is_number()) throw wrong_type("logit_bias", "a number for each token id", bias);
    p.bias_values.push_back(read_bounded(bias, "logit_bias", -kMaxLogitBias, false, kMaxLogitBias));
  }
}

void read_min_p(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.min_p = read_bounded(value, "min_p", 0.0, false, 1.0);
}

void read_min_tokens(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  request.processing.min_tokens =
      static_cast<int32_t>(read_integer(value, "min_tokens", 0, limits.max_tokens_limit));
}

void read_stop_token_ids(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  const Json::array_t& items = read_array(value, "stop_token_ids");
  if (items.size() > kMaxStopTokenIds) {
    throw invalid_value("stop_token_ids", "at most " + std::to_string(kMaxStopTokenIds) +
                                              " ids are allowed, but got " +
                                              std::to_string(items.size()) + ".");
  }
  request.stop_token_ids.clear();
  for (const Json& item : items)
    request.stop_token_ids.push_back(
        static_cast<int32_t>(read_integer(item, "stop_token_ids", 0, limits.vocab_size - 1)));
}

}  // namespace tandem::api
