// What the server does with a request body before the engine, shared by the
// request fuzzers and the HTTP fuzzer: the default deployment's limits
// (configs/local.yaml, through api::request_limits_of as the server),
// the tiny target's tokenizer and chat template, and each route's parse,
// render and tokenize (completion_route.cpp, chat_route.cpp) up to the
// engine job, and /tokenize and /detokenize (tokenize_route.cpp) up to their answer, with what every accepted request and every refusal must be.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"
#include "coordinator/api/api_error.h"
#include "coordinator/api/choice_fields.h"
#include "coordinator/api/completion_request.h"
#include "coordinator/api/tokenize_request.h"
#include "coordinator/chat/chat_request.h"
#include "coordinator/chat/chat_template.h"
#include "coordinator/config/deployment_config.h"
#include "tests/fuzz/fuzz_support.h"

namespace tandem::fuzz {

struct ServedModel {
  DeploymentConfig config;
  api::RequestLimits limits;
  Tokenizer tokenizer;
  chat::ChatTemplate chat_template;
};

inline const ServedModel& served_model() {
  static const ServedModel model = [] {
    DeploymentConfig config = load_deployment(TANDEM_SOURCE_DIR "/configs/local.yaml");
    api::RequestLimits limits = api::request_limits_of(config);
    const std::string model_dir = TANDEM_SOURCE_DIR "/models/tiny/target";
    Tokenizer tokenizer = Tokenizer::load(model_dir);
    limits.vocab_size = tokenizer.vocab_size();  // the tiny target's config.json says the same
    chat::ChatTemplate chat_template =
        chat::ChatTemplate::load(model_dir, config.server.served_model_name);
    fuzz_check(chat_template.available(), "the tiny target has no chat template");
    return ServedModel{std::move(config), std::move(limits), std::move(tokenizer),
                       std::move(chat_template)};
  }();
  return model;
}

// A refusal is a 400 or 404 whose body (error_json) is OpenAI's JSON shape.
inline void check_refusal(const api::ApiError& error) {
  fuzz_check(error.status == 400 || error.status == 404,
             "a request was refused with status " + std::to_string(error.status) + ": " +
                 error.message);
  const auto body = nlohmann::json::parse(api::error_json(error), nullptr, false);
  fuzz_check(!body.is_discarded() && body["error"]["message"].is_string() &&
                 !body["error"]["message"].get<std::string>().empty(),
             "the error body is not {\"error\": {\"message\": ...}}: " + api::error_json(error));
}

// The route turns an Error into a 400 too; one that says Tandem has a bug is a finding.
inline void check_error(const Error& error) {
  fuzz_check(error.kind() != ErrorKind::internal,
             std::string("internal error while reading a request: ") + error.what());
}

// A double as a message shows it: 1e-300, not to_string's 0.000000.
inline std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// What the engine will take from an accepted request: each sampling value
// in its range as the float the engine gets (make_job converts).
inline void check_sampling(const api::CompletionRequest& request, const api::RequestLimits& limits) {
  fuzz_check(request.max_tokens >= 1 && request.max_tokens <= limits.max_tokens_limit,
             "accepted max_tokens " + std::to_string(request.max_tokens));
  const auto temperature = static_cast<float>(request.temperature);
  fuzz_check(std::isfinite(temperature) && temperature >= 0 && temperature <= 2,
             "accepted temperature " + number(request.temperature));
  const auto top_p = static_cast<float>(request.top_p);
  fuzz_check(top_p > 0 && top_p <= 1, "accepted top_p " + number(request.top_p) +
                                          ", which the engine gets as " + number(top_p));
  fuzz_check(request.top_k >= 0, "accepted top_k " + std::to_string(request.top_k));
  fuzz_check(static_cast<int>(request.stop.size()) <= limits.max_stop_sequences,
             "accepted more stop sequences than the limit");
  for (const std::string& stop : request.stop) fuzz_check(!stop.empty(), "accepted an empty stop");
  if (request.speculation.gamma && !request.speculation.gamma->automatic) {
    const int gamma = request.speculation.gamma->gamma;
    fuzz_check(gamma >= 0 && gamma <= api::kMaxRequestGamma, "accepted gamma " + std::to_string(gamma));
  }
  fuzz_check(request.stream || !request.include_usage, "include_usage without stream");
  fuzz_check(request.model == limits.served_model_name, "accepted model " + request.model);
}

// POST /v1/completions up to the engine job.
inline void completion_route(std::string_view body, const ServedModel& served) {
  try {
    const api::CompletionRequest request = api::parse_completion_request(body, served.limits);
    check_sampling(request, served.limits);
    fuzz_check(!request.prompts.empty() && request.prompts.size() <= static_cast<size_t>(api::kMaxPrompts),
               "accepted " + std::to_string(request.prompts.size()) + " prompts");
    for (const api::Prompt& prompt : request.prompts) {
      if (const auto* text = std::get_if<std::string>(&prompt)) {
        fuzz_check(is_valid_utf8(*text), "accepted a prompt that is not valid UTF-8");
        const std::vector<int32_t> ids = served.tokenizer.encode(*text, /*add_special=*/true);
        fuzz_check(served.tokenizer.decode(ids) == *text, "the prompt does not decode to itself");
      } else {
        const auto& ids = std::get<std::vector<int32_t>>(prompt);
        fuzz_check(!ids.empty(), "accepted an empty token prompt");
        for (const int32_t id : ids)
          fuzz_check(id >= 0 && id < served.limits.vocab_size, "accepted a token id outside the vocabulary");
      }
    }
  } catch (const api::ApiError& error) {
    check_refusal(error);
  } catch (const Error& error) {
    check_error(error);
  }
}

// POST /v1/chat/completions up to the engine job: parse, render with the
// model's chat template, tokenize.
inline void chat_route(std::string_view body, const ServedModel& served) {
  try {
    const chat::ChatRequest request = chat::parse_chat_request(body, served.limits);
    check_sampling(request.sampling, served.limits);
    fuzz_check(request.messages.is_array() && !request.messages.empty(), "accepted no messages");
    const std::string rendered = served.chat_template.render(request);
    // Rendered from valid JSON strings: the tokenizer must take it.
    const std::vector<int32_t> ids = served.tokenizer.encode(rendered, /*add_special=*/false);
    fuzz_check(served.tokenizer.decode(ids) == rendered, "the rendered prompt does not decode to itself");
  } catch (const api::ApiError& error) {
    check_refusal(error);
  } catch (const Error& error) {
    check_error(error);
  }
}

// POST /tokenize: parse, render the messages form, encode; the ids decode
// back to the text. POST /detokenize: every accepted id is in the vocabulary.
inline void tokenize_route(std::string_view body, const ServedModel& served) {
  try {
    const api::TokenizeRequest request = api::parse_tokenize_request(body, served.limits);
    std::string text;
    if (request.prompt) {
      text = *request.prompt;
    } else {
      text = served.chat_template.render(chat::parse_chat_request(request.chat_body, served.limits));
    }
    const std::vector<int32_t> ids = served.tokenizer.encode(text, request.add_special_tokens);
    fuzz_check(served.tokenizer.decode(ids) == text, "a tokenized text does not decode to itself");
  } catch (const api::ApiError& error) {
    check_refusal(error);
  } catch (const Error& error) {
    check_error(error);
  }
}

inline void detokenize_route(std::string_view body, const ServedModel& served) {
  try {
    const std::vector<int32_t> ids =
        api::parse_detokenize_request(body, served.limits, served.tokenizer.vocab_size());
    for (const int32_t id : ids)
      fuzz_check(id >= 0 && id < served.tokenizer.vocab_size(), "accepted a token id outside the vocabulary");
    (void)served.tokenizer.decode(ids);
  } catch (const api::ApiError& error) {
    check_refusal(error);
  } catch (const Error& error) {
    check_error(error);
  }
}

}  // namespace tandem::fuzz
