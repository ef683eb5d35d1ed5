#include "coordinator/api/completion_response.h"

#include <nlohmann/json.hpp>
#include <random>

namespace tandem::api {
namespace {

using Json = OrderedJson;

std::string dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json header(std::string_view id, int64_t created_unix, std::string_view model) {
  Json body;
  body["id"] = id;
  body["object"] = "text_completion";
  body["created"] = created_unix;
  body["model"] = model;
  return body;
}

Json choice(std::string_view text, std::optional<std::string_view> finish_reason, int index,
            const Json& logprobs) {
  Json one;
  one["text"] = text;
  one["index"] = index;
  one["logprobs"] = logprobs;
  one["finish_reason"] = finish_reason ? Json(*finish_reason) : Json(nullptr);
  return one;
}

}  // namespace

Json usage_object(const Usage& usage) {
  Json out;
  out["prompt_tokens"] = usage.prompt_tokens;
  out["completion_tokens"] = usage.completion_tokens;
  out["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  out["prompt_tokens_details"] = Json{{"cached_tokens", usage.cached_tokens}};
  return out;
}

Json speculation_object(const SpeculationReport& report) {
  Json out;
  out["target_steps"] = report.target_steps;
  out["draft_tokens"] = report.draft_tokens;
  out["accepted_tokens"] = report.accepted_tokens;
  out["acceptance_rate"] = report.acceptance_rate;  // nlohmann writes NaN/inf as null
  out["gamma_policy"] = report.gamma_policy;
  out["drafter"] = report.drafter;
  out["lossless"] = report.lossless;
  out["coupling"] = report.coupling;
  return out;
}

std::string completion_json(std::string_view id, int64_t created_unix, std::string_view model,
                            const std::vector<CompletionChoice>& choices, const Usage& usage,
                            const SpeculationReport& speculation) {
  Json body = header(id, created_unix, model);
  body["choices"] = Json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    body["choices"].push_back(choice(choices[i].text, choices[i].finish_reason, static_cast<int>(i),
                                        choices[i].logprobs));
  body["usage"] = usage_object(usage);
  body["speculation"] = speculation_object(speculation);
  return dump(body);
}

std::string completion_json(std::string_view id, int64_t created_unix, std::string_view model,
                            std::string_view text, std::string_view finish_reason,
                            const Usage& usage, const SpeculationReport& speculation,
                            const Json& logprobs) {
  return completion_json(id, created_unix, model,
                         {CompletionChoice{std::string(text), std::string(finish_reason), logprobs}},
                         usage, speculation);
}

std::string chunk_json(std::string_view id, int64_t created_unix, std::string_view model,
                       std::string_view text_delta,
                       std::optional<std::string_view> finish_reason, bool include_usage,
                       int index, const Json& logprobs) {
  Json body = header(id, created_unix, model);
  body["choices"] = Json::array({choice(text_delta, finish_reason, index, logprobs)});
  if (include_usage) body["usage"] = nullptr;
  return dump(body);
}

std::string usage_chunk_json(std::string_view id, int64_t created_unix, std::string_view model,
                             const Usage& usage, const SpeculationReport& speculation) {
  Json body = header(id, created_unix, model);
  body["choices"] = Json::array();
  body["usage"] = usage_object(usage);
  body["speculation"] = speculation_object(speculation);
  return dump(body);
}

namespace {

Json model_object(std::string_view served_name, int64_t created_unix, std::string_view owned_by,
                  int max_model_len) {
  Json model;
  model["id"] = served_name;
  model["object"] = "model";
  model["created"] = created_unix;
  model["owned_by"] = owned_by;
  model["max_model_len"] = max_model_len;
  return model;
}

}  // namespace

std::string models_json(std::string_view served_name, int64_t created_unix,
                        std::string_view owned_by, int max_model_len) {
  Json body;
  body["object"] = "list";
  body["data"] = Json::array({model_object(served_name, created_unix, owned_by, max_model_len)});
  return dump(body);
}

std::string model_json(std::string_view served_name, int64_t created_unix,
                       std::string_view owned_by, int max_model_len) {
  return dump(model_object(served_name, created_unix, owned_by, max_model_len));
}

std::string sse_event(std::string_view json) {
  std::string event;
  event.reserve(json.size() + 8);
  event.append("data: ").append(json).append("\n\n");
  return event;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string new_id(std::string_view prefix, int length) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // One generator per thread: no lock, and ids from different threads still
  // differ because each generator is seeded from the OS's entropy source.
  thread_local std::mt19937_64 generator = [] {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy()};
    return std::mt19937_64(seed);
  }();
  std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
  std::string id(prefix);
  for (int i = 0; i < length; ++i) id += kAlphabet[pick(generator)];
  return id;
}

std::string new_completion_id() { return new_id("cmpl-", 24); }

}  // namespace tandem::api
