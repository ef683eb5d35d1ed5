#include "coordinator/api/completion_request.h"

#include <cmath>
#include <limits>

#include "coordinator/api/choice_fields.h"
#include "coordinator/api/coupling_choice.h"
#include "coordinator/api/json_fields.h"
#include "coordinator/api/logprob_fields.h"
#include "coordinator/api/processing_fields.h"
#include "coordinator/config/deployment_config.h"

namespace tandem::api {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

ApiError unrecognized(const std::string& key) {
  return invalid_request(key, "Unrecognized request argument supplied: " + key);
}

ApiError not_supported(std::string_view field, std::string_view what_instead) {
  return invalid_value(field, "this parameter is not supported by this server. " +
                                  std::string(what_instead));
}

void read_model(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  const std::string& model = read_string(value, "model");
  if (model != limits.served_model_name) {
    ApiError error = not_found("The model `" + model + "` does not exist. This server serves `" +
                               limits.served_model_name + "` (see GET /v1/models).");
    error.param = "model";
    error.code = "model_not_found";
    throw error;
  }
  request.model = model;
}

double read_number_in(const Json& value, std::string_view field, double low, bool low_inclusive,
                      double high) {
  const double number = read_number(value, field);
  if (number < low || (!low_inclusive && number == low) || number > high) {
    const std::string range = (low_inclusive ? "[" : "(") + describe_number(Json(low)) + ", " +
                              describe_number(Json(high)) + "]";
    throw invalid_value(field, "Expected a value in " + range + ", but got " +
                                   describe_number(value) + " instead.");
  }
  return number;
}

// 0 is taken here and refused afterwards unless the request echoes (chat:
// always; logprob_fields.h).
void read_max_tokens(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  if (is_integral_number(value) && exact_integer(value) == 0) {
    request.max_tokens = 0;
    return;
  }
  request.max_tokens = static_cast<int>(read_integer(value, "max_tokens", 1, limits.max_tokens_limit));
}

// temperature and top_p are checked again as the engine's floats: 1e-300
// is in range as a double but 0 as a float (greedy, or a top_p the engine
// refuses), so it is refused here, naming the field.
void read_temperature(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.temperature = read_number_in(value, "temperature", 0.0, true, 2.0);
  as_engine_float(request.temperature, value, "temperature");
}

void read_top_p(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.top_p = read_number_in(value, "top_p", 0.0, false, 1.0);
  as_engine_float(request.top_p, value, "top_p");
}

void read_top_k(const Json& value, const RequestLimits&, CompletionRequest& request) {
  const int64_t top_k = read_integer(value, "top_k", -1, kIntMax);
  request.top_k = top_k == -1 ? 0 : static_cast<int>(top_k);  // vLLM's "off" is our 0
}

// Any integer from -2^63 to 2^64 - 1; negative seeds wrap modulo 2^64, so
// clients that pass signed 64-bit seeds get distinct streams for distinct seeds.
void read_seed(const Json& value, const RequestLimits&, CompletionRequest& request) {
  if (!is_integral_number(value)) throw wrong_type("seed", "an integer", value);
  if (value.is_number_unsigned()) {
    request.seed = value.get<uint64_t>();
  } else if (value.is_number_integer()) {
    request.seed = static_cast<uint64_t>(value.get<int64_t>());
  } else {
    // A decimal (7.0, 1e3), or an integer literal outside [-2^63, 2^64) that
    // the parser could only hold as a double. Past 2^53 a double no longer
    // says which integer was written, so only smaller ones are taken.
    const double d = value.get<double>();
    constexpr double two_to_53 = 9007199254740992.0;
    if (std::fabs(d) >= two_to_53) {
      throw invalid_value("seed", "Expected an integer in [-2^63, 2^64 - 1] (written without a "
                                  "fraction or exponent beyond 2^53), but got " +
                                      describe_number(value) + " instead.");
    }
    request.seed = static_cast<uint64_t>(static_cast<int64_t>(d));
  }
}

void read_stop(const Json& value, const RequestLimits& limits, CompletionRequest& request) {
  const auto non_empty = [](const Json& item) {
    const std::string& text = read_string(item, "stop");
    if (text.empty()) throw invalid_value("stop", "stop sequences must not be empty strings.");
    return text;
  };
  request.stop.clear();
  if (value.is_string()) {
    request.stop.push_back(non_empty(value));
    return;
  }
  if (!value.is_array()) throw wrong_type("stop", "a string or an array of strings", value);
  const Json::array_t& items = value.get_ref<const Json::array_t&>();
  if (items.size() > static_cast<std::size_t>(limits.max_stop_sequences)) {
    throw invalid_value("stop", "at most " + std::to_string(limits.max_stop_sequences) +
                                    " stop sequences are allowed, but got " +
                                    std::to_string(items.size()) + ".");
  }
  for (const Json& item : items) request.stop.push_back(non_empty(item));
}

void read_stream(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.stream = read_bool(value, "stream");
}

void read_stream_options(const Json& value, const RequestLimits&, CompletionRequest& request) {
  for (const auto& [key, option] : read_object(value, "stream_options")) {
    if (key != "include_usage") throw unrecognized("stream_options." + key);
    if (!option.is_null()) request.include_usage = read_bool(option, "stream_options.include_usage");
  }
}

void read_suffix(const Json&, const RequestLimits&, CompletionRequest&) {
  throw not_supported("suffix", "Leave it out or set it to null.");
}

void read_user(const Json& value, const RequestLimits&, CompletionRequest&) {
  read_string(value, "user");  // accepted for compatibility; nothing uses it
}

// As vLLM: the prefix cache shares blocks only between requests of one salt,
// so a tenant's prompts never speed up (or time) another's.
void read_cache_salt(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.cache_salt = read_string(value, "cache_salt");
}

// Extension (as vLLM): keep generating past the end-of-sequence token, for
// benchmarks that need outputs of a fixed length.
void read_ignore_eos(const Json& value, const RequestLimits&, CompletionRequest& request) {
  request.ignore_eos = read_bool(value, "ignore_eos");
}

GammaChoice read_gamma(const Json& value) {
  if (value.is_string()) {
    if (value.get_ref<const std::string&>() != "auto") {
      throw invalid_value("speculation.gamma", "Expected an integer in [0, " +
                                                   std::to_string(kMaxRequestGamma) +
                                                   "] or \"auto\", but got " + value.dump() + ".");
    }
    return GammaChoice{.automatic = true, .gamma = 0};
  }
  if (!value.is_number()) {
    throw wrong_type("speculation.gamma", "an integer or \"auto\"", value);
  }
  const int64_t gamma = read_integer(value, "speculation.gamma", 0, kMaxRequestGamma);
  return GammaChoice{.automatic = false, .gamma = static_cast<int>(gamma)};
}

DrafterChoice read_drafter(const Json& value) {
  const std::string& name = read_string(value, "speculation.drafter");
  for (const DrafterChoice choice : {DrafterChoice::model, DrafterChoice::ngram, DrafterChoice::none}) {
    if (name == drafter_name(choice)) return choice;
  }
  throw invalid_value("speculation.drafter", "Expected one of \"model\", \"ngram\", \"none\", but got " +
                                                 value.dump() + ".");
}

// {"gamma": ..., "drafter": ..., "pipeline": bool, "coupling": ...}, true
// (the server's defaults) or false (none).
void read_speculation(const Json& value, const RequestLimits&, CompletionRequest& request) {
  SpeculationChoice& choice = request.speculation;
  const GammaChoice no_drafting{.automatic = false, .gamma = 0};
  if (value.is_boolean()) {
    if (!value.get<bool>()) choice = SpeculationChoice{no_drafting, DrafterChoice::none};
    return;
  }
  if (!value.is_object()) throw wrong_type("speculation", "an object or a boolean", value);
  for (const auto& [key, item] : read_object(value, "speculation")) {
    if (key != "gamma" && key != "drafter" && key != "pipeline" && key != "coupling")
      throw unrecognized("speculation." + key);
  }
  const Json::object_t& fields = value.get_ref<const Json::object_t&>();
  if (const auto it = fields.find("gamma"); it != fields.end() && !it->second.is_null()) {
    choice.gamma = read_gamma(it->second);
  }
  if (const auto it = fields.find("drafter"); it != fields.end() && !it->second.is_null()) {
    choice.drafter = read_drafter(it->second);
  }
  if (const auto it = fields.find("pipeline"); it != fields.end() && !it->second.is_null()) {
    if (!it->second.is_boolean()) throw wrong_type("speculation.pipeline", "a boolean", it->second);
    choice.pipeline = it->second.get<bool>();
  }
  if (const auto it = fields.find("coupling"); it != fields.end() && !it->second.is_null()) {
    choice.coupling = read_coupling(it->second);
  }
  if (choice.drafter == DrafterChoice::none) {
    if (choice.gamma && *choice.gamma != no_drafting) {
      throw invalid_value("speculation.gamma",
                          "with drafter \"none\" nothing is drafted; leave gamma out or set it to 0.");
    }
    choice.gamma = no_drafting;
  }
}

using FieldReader = void (*)(const Json& value, const RequestLimits& limits, CompletionRequest& request);

struct FieldRule {
  std::string_view name;
  FieldReader read;     // called only for a present, non-null value
  bool shared = false;  // /v1/chat/completions reads it the same way
};

// Every top-level field this server knows, in the order they are checked.
constexpr FieldRule kFields[] = {
    {"model", read_model, true},
    {"prompt", read_prompts},
    {"max_tokens", read_max_tokens, true},
    {"temperature", read_temperature, true},
    {"top_p", read_top_p, true},
    {"top_k", read_top_k, true},
    {"seed", read_seed, true},
    {"stop", read_stop, true},
    {"stream", read_stream, true},
    {"stream_options", read_stream_options, true},
    {"n", read_n, true},
    {"best_of", read_best_of},
    {"echo", read_echo},
    {"logprobs", read_completion_logprobs},
    {"presence_penalty", read_presence_penalty, true},
    {"frequency_penalty", read_frequency_penalty, true},
    {"logit_bias", read_logit_bias, true},
    {"repetition_penalty", read_repetition_penalty, true},
    {"min_p", read_min_p, true},
    {"min_tokens", read_min_tokens, true},
    {"stop_token_ids", read_stop_token_ids, true},
    {"suffix", read_suffix},
    {"user", read_user, true},
    {"speculation", read_speculation, true},
    {"ignore_eos", read_ignore_eos, true},
    {"cache_salt", read_cache_salt, true},
};

bool is_known_field(std::string_view key) {
  for (const FieldRule& rule : kFields) {
    if (rule.name == key) return true;
  }
  return false;
}

}  // namespace

std::string_view drafter_name(DrafterChoice drafter) {
  switch (drafter) {
    case DrafterChoice::model: return "model";
    case DrafterChoice::ngram: return "ngram";
    case DrafterChoice::none: return "none";
  }
  return "none";  // unreachable: every choice is handled above
}

bool read_shared_field(std::string_view key, const Json& value, const RequestLimits& limits,
                       CompletionRequest& request) {
  for (const FieldRule& rule : kFields) {
    if (rule.name != key || !rule.shared) continue;
    if (!value.is_null()) rule.read(value, limits, request);
    return true;
  }
  return false;
}

CompletionRequest default_request(const RequestLimits& limits) {
  CompletionRequest request;
  request.model = limits.served_model_name;
  request.max_tokens = limits.default_max_tokens;
  request.temperature = limits.default_temperature;
  request.top_p = limits.default_top_p;
  request.top_k = limits.default_top_k;
  return request;
}

CompletionRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
  const Json root = parse_request_body(body);
  if (!root.is_object()) {
    throw invalid_request(std::nullopt, "The request body must be a JSON object, but got " +
                                            json_type_phrase(root) + ".");
  }
  for (const auto& [key, value] : root.items()) {
    if (!is_known_field(key)) throw unrecognized(key);
  }

  CompletionRequest request = default_request(limits);
  bool has_prompt = false;
  for (const FieldRule& rule : kFields) {
    const auto it = root.find(rule.name);
    if (it == root.end() || it->is_null()) continue;
    rule.read(*it, limits, request);
    has_prompt |= rule.name == "prompt";
  }
  if (!has_prompt) {
    throw invalid_request("prompt", "Missing required parameter: 'prompt'. "
                                    "Send the text (or token ids) to continue.");
  }
  if (const auto it = root.find("stream_options"); it != root.end() && !it->is_null() && !request.stream) {
    throw invalid_request("stream_options",
                          "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  }
  check_choice_counts(request);
  check_echo_and_max_tokens(request);
  return request;
}

RequestLimits request_limits_of(const DeploymentConfig& config) {
  RequestLimits limits;
  limits.default_max_tokens = config.sampling.max_tokens;
  limits.default_temperature = config.sampling.temperature;
  limits.default_top_p = config.sampling.top_p;
  limits.default_top_k = config.sampling.top_k;
  limits.max_tokens_limit = config.limits.max_tokens;
  limits.max_stop_sequences = config.limits.max_stop_sequences;
  limits.served_model_name = config.server.served_model_name;
  return limits;
}

}  // namespace tandem::api
