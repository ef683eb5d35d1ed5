#include "coordinator/api/choice_fields.h"

#include <algorithm>

namespace tandem::api {
namespace {

// `where` names the element in messages ("prompt", "prompt[2]"); the error's
// param is always `prompt`, the field.
std::string read_text_prompt(const Json& value, const std::string& where) {
  if (!value.is_string()) {
    throw invalid_request("prompt", "Invalid type for '" + where + "': expected a string, but got " +
                                        json_type_phrase(value) + " instead.");
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty()) {
    throw invalid_request("prompt", "Invalid '" + where + "': the prompt is empty. Send at least one character.");
  }
  return text;
}

std::vector<int32_t> read_token_ids(const Json::array_t& items, const RequestLimits& limits,
                                    const std::string& where) {
  if (items.empty()) {
    throw invalid_request("prompt", "Invalid '" + where + "': the prompt is empty. Send at least one token id.");
  }
  std::vector<int32_t> ids;
  ids.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string item = where + "[" + std::to_string(i) + "]";
    if (!is_integral_number(items[i])) {
      throw invalid_request("prompt", "Invalid type for '" + item +
                                          "': expected an integer token id, but got " +
                                          json_type_phrase(items[i]) + " instead.");
    }
    const std::optional<int64_t> id = exact_integer(items[i]);
    if (!id || *id < 0 || *id >= limits.vocab_size) {
      throw invalid_request("prompt", "Invalid '" + item + "': token id " + describe_number(items[i]) +
                                          " is outside this model's vocabulary [0, " +
                                          std::to_string(limits.vocab_size) + ").");
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

}  // namespace

void read_prompts(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  constexpr std::string_view kShapes =
      "a string, an array of token ids, or an array of strings or of token-id arrays";
  request.prompts.clear();
  if (value.is_string()) {
    request.prompts.emplace_back(read_text_prompt(value, "prompt"));
    return;
  }
  if (!value.is_array()) throw wrong_type("prompt", kShapes, value);
  const Json::array_t& items = value.get_ref<const Json::array_t&>();
  if (items.empty()) throw invalid_value("prompt", "the list is empty. Send at least one prompt.");
  // A list of numbers is one prompt of token ids; anything else a batch.
  if (items.front().is_number()) {
    request.prompts.emplace_back(read_token_ids(items, limits, "prompt"));
    return;
  }
  if (items.size() > static_cast<std::size_t>(kMaxPrompts)) {
    throw invalid_value("prompt", "at most " + std::to_string(kMaxPrompts) +
                                      " prompts are allowed in one request, but got " +
                                      std::to_string(items.size()) + ". Split the batch.");
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = "prompt[" + std::to_string(i) + "]";
    if (items[i].is_string()) {
      request.prompts.emplace_back(read_text_prompt(items[i], where));
    } else if (items[i].is_array()) {
      request.prompts.emplace_back(read_token_ids(items[i].get_ref<const Json::array_t&>(), limits, where));
    } else {
      throw invalid_request("prompt", "Invalid type for '" + where +
                                          "': expected a string or an array of token ids, but got " +
                                          json_type_phrase(items[i]) + " instead.");
    }
  }
}

void read_n(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.n = static_cast<int>(read_integer(value, "n", 1, kMaxChoices));
}

void read_best_of(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.best_of = static_cast<int>(read_integer(value, "best_of", 1, kMaxChoices));
}

void check_choice_counts(const CompletionRequest& request) {
  const int best_of = request.best_of.value_or(request.n);
  if (best_of < request.n) {
    throw invalid_value("best_of", "best_of (" + std::to_string(best_of) +
                                       ") must be at least n (" + std::to_string(request.n) +
                                       "): it is how many sequences are generated to return n.");
  }
  if (request.stream && best_of > request.n) {
    throw invalid_value("best_of", "best_of greater than n cannot be streamed (only finished "
                                   "sequences can be ranked). Leave best_of out or set stream to false.");
  }
  const int sequences = best_of * static_cast<int>(std::max<std::size_t>(request.prompts.size(), 1));
  if (sequences > kMaxSequences) {
    const std::string field = best_of > request.n ? "best_of" : "n";
    throw invalid_value(field, std::to_string(request.prompts.size()) + " prompts × " + field + " " +
                                   std::to_string(best_of) + " = " + std::to_string(sequences) +
                                   " sequences; at most " + std::to_string(kMaxSequences) +
                                   " are allowed in one request. Split the batch.");
  }
}

}  // namespace tandem::api
