// POST /v1/completions: parse, tokenize, check against the model, then the
// job flow both completion routes share (job_flow.h). make_job, the request
// as the engine takes it, is the chat route's too.
#include <algorithm>
#include <random>

#include "common/error.h"
#include "coordinator/api/completion_response.h"
#include "coordinator/api/token_logprobs.h"
#include "coordinator/server/api_service.h"
#include "coordinator/server/job_flow.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

uint64_t random_seed() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

std::string gamma_policy_name(const GammaPolicy& policy, const std::string& drafter) {
  if (drafter == "none") return "off";
  return policy.automatic ? "auto" : std::to_string(policy.gamma);
}

}  // namespace

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

api::ApiError context_exceeded(std::string param, std::string message) {
  api::ApiError error = api::invalid_request(std::move(param), std::move(message));
  error.code = "context_length_exceeded";
  return error;
}

}  // namespace

int ApiService::request_token_limit() const {
  if (model_.kv_positions <= 0) return model_.context_length;
  return static_cast<int>(std::min<int64_t>(model_.context_length, int64_t{model_.kv_positions} + 1));
}

std::vector<int32_t> ApiService::prompt_tokens(const api::CompletionRequest& request) const {
  if (const auto* text = std::get_if<std::string>(&request.prompt)) {
    std::vector<int32_t> ids = tokenizer_->encode(*text, /*add_special=*/true);
    if (ids.empty()) throw api::invalid_request("prompt", "the prompt encodes to no tokens");
    return ids;
  }
  return std::get<std::vector<int32_t>>(request.prompt);
}

CompletionJob ApiService::make_job(const api::CompletionRequest& request,
                                   std::vector<int32_t> prompt) const {
  CompletionJob job;
  SpeculationRequest& engine_request = job.request;
  engine_request.prompt = std::move(prompt);
  const int prompt_tokens = static_cast<int>(engine_request.prompt.size());
  const int max_prompt = settings_.max_prompt_tokens > 0 ? settings_.max_prompt_tokens
                                                          : model_.context_length - 1;
  if (prompt_tokens > max_prompt) {
    throw context_exceeded(
        "prompt", "the prompt is " + std::to_string(prompt_tokens) + " tokens; this model takes " +
                      std::to_string(max_prompt) + " (context " +
                      std::to_string(model_.context_length) + " tokens)");
  }
  if (prompt_tokens + request.max_tokens > model_.context_length) {
    throw context_exceeded(
        "max_tokens", "prompt (" + std::to_string(prompt_tokens) + " tokens) + max_tokens (" +
                          std::to_string(request.max_tokens) + ") exceed the model's context of " +
                          std::to_string(model_.context_length) + " tokens");
  }
  // The KV cache holds a request's tokens but the last (never fed): one that
  // cannot fit even alone is refused here, never cut short.
  if (model_.kv_positions > 0 &&
      int64_t{prompt_tokens} + request.max_tokens - 1 > model_.kv_positions) {
    const bool prompt_alone = prompt_tokens > model_.kv_positions;
    throw api::invalid_request(
        prompt_alone ? "prompt" : "max_tokens",
        "the prompt (" + std::to_string(prompt_tokens) + " tokens) and max_tokens (" +
            std::to_string(request.max_tokens) + ") need " +
            std::to_string(int64_t{prompt_tokens} + request.max_tokens - 1) +
            " positions of the KV cache, which holds " + std::to_string(model_.kv_positions) +
            " even with no other request in flight (scheduler.kv_blocks × scheduler.block_size)" +
            (prompt_alone ? ": shorten the prompt"
                          : ": ask for at most " +
                                std::to_string(model_.kv_positions + 1 - prompt_tokens) +
                                " tokens") +
            ", or raise scheduler.kv_blocks");
  }
  engine_request.max_new_tokens = request.max_tokens;
  job.logprobs = request.logprobs >= 0;
  job.echo = request.echo;
  engine_request.logprobs = request.logprobs;
  engine_request.prompt_logprobs = request.echo && job.logprobs;
  // max_tokens 0 (echo only) is a prefill that scores the prompt: the engine
  // takes it as that, whether or not the reply shows the scores.
  if (request.max_tokens == 0) {
    engine_request.prompt_logprobs = true;
    engine_request.logprobs = std::max(engine_request.logprobs, 0);
  }
  engine_request.sampling.temperature = static_cast<float>(request.temperature);
  engine_request.sampling.top_p = static_cast<float>(request.top_p);
  engine_request.sampling.top_k = request.top_k;
  engine_request.sampling.seed = request.seed.value_or(random_seed());
  // As the engine's types (the routes' readers checked each field; this
  // covers the deployment's defaults too): the engine would refuse it.
  if (const std::optional<SamplingProblem> problem = find_sampling_problem(engine_request.sampling))
    throw api::invalid_request(problem->field, "Invalid '" + problem->field + "': " + problem->message);
  if (!request.ignore_eos) engine_request.stop_ids = model_.stop_ids;
  engine_request.lenience = settings_.lenience;

  // Speculation: the deployment's policy unless the request overrides it.
  engine_request.gamma = settings_.gamma;
  std::string drafter = settings_.drafter;
  const api::SpeculationChoice& choice = request.speculation;
  if (choice.drafter) {
    drafter = std::string(api::drafter_name(*choice.drafter));
    if (std::find(settings_.drafters.begin(), settings_.drafters.end(), drafter) ==
        settings_.drafters.end()) {
      std::string known;
      for (const std::string& name : settings_.drafters) known += (known.empty() ? "" : ", ") + name;
      throw api::invalid_request("speculation.drafter", "drafter \"" + drafter +
                                                            "\" is not deployed here (deployed: " +
                                                            known + ")");
    }
  }
  if (choice.gamma) {
    engine_request.gamma.automatic = choice.gamma->automatic;
    if (!choice.gamma->automatic) engine_request.gamma.gamma = choice.gamma->gamma;
  }
  // γ = 0 is plain decoding: no drafter at all (not even its catch-up passes).
  if (!engine_request.gamma.automatic && engine_request.gamma.gamma == 0) drafter = "none";
  engine_request.drafter = drafter;
  engine_request.pipeline = choice.pipeline;
  job.gamma_policy = gamma_policy_name(engine_request.gamma, drafter);
  job.stop_strings = request.stop;
  job.received = SteadyClock::now();
  job.deadline = job.received + settings_.request_timeout;
  return job;
}

namespace {

// The completions stream: text_completion chunks.
class CompletionEvents final : public EventFormat {
 public:
  CompletionEvents(std::string id, int64_t created, std::string model, bool include_usage,
                   bool logprobs)
      : id_(std::move(id)), created_(created), model_(std::move(model)),
        include_usage_(include_usage), logprobs_(logprobs) {}

  std::vector<std::string> text(const std::string& piece,
                                std::vector<api::LogprobEntry> logprobs) override {
    const api::OrderedJson shown =
        logprobs_ ? api::completion_logprobs_json(logprobs) : api::OrderedJson(nullptr);
    return {api::chunk_json(id_, created_, model_, piece, std::nullopt, include_usage_, shown)};
  }
  std::vector<std::string> end(const CompletionEnd& end) override {
    std::vector<std::string> events = {
        api::chunk_json(id_, created_, model_, "", end.finish_reason, include_usage_)};
    if (include_usage_)
      events.push_back(api::usage_chunk_json(id_, created_, model_, end.usage, end.speculation));
    return events;
  }

 private:
  std::string id_;
  int64_t created_;
  std::string model_;
  bool include_usage_;
  bool logprobs_;
};

}  // namespace

EngineLoop* ApiService::serving_engine_loop(std::optional<api::ApiError>& refusal) const {
  EngineLoop* engine_loop = engine_loop_.load();
  if (!engine_loop || draining_.load()) {
    refusal = api::unavailable(engine_loop ? "the server is shutting down"
                                           : "the models are still loading; see GET /ready");
    return nullptr;
  }
  return engine_loop;
}

asio::awaitable<void> ApiService::complete(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  std::optional<api::ApiError> rejection;
  EngineLoop* engine_loop = serving_engine_loop(rejection);
  api::CompletionRequest request;
  CompletionJob job;
  if (engine_loop) {
    try {
      request = api::parse_completion_request(http_request.body(), settings_.limits);
      job = make_job(request, prompt_tokens(request));
    } catch (const api::ApiError& error) {
      rejection = error;
    } catch (const Error& error) {
      rejection = api::invalid_request(std::nullopt, error.what());
    }
  }
  const std::optional<RunningJob> running = co_await admit(exchange, engine_loop, rejection, job);
  if (!running) co_return;

  const std::string id = api::new_completion_id();
  const int64_t created = unix_now();
  const std::string& model = settings_.served_model_name;
  if (request.stream) {
    CompletionEvents events(id, created, model, request.include_usage, request.logprobs >= 0);
    co_await stream_job(exchange, *running, events);
    co_return;
  }
  const std::optional<FinishedJob> finished = co_await collect_job(exchange, *running);
  if (!finished) co_return;
  const CompletionEnd& end = finished->end;
  if (end.error) {
    co_await exchange.respond(error_response(http_request, *end.error));
  } else {
    api::OrderedJson logprobs;  // null unless asked for
    if (request.logprobs >= 0) logprobs = api::completion_logprobs_json(finished->logprobs);
    co_await exchange.respond(http::make_response(
        http_request, bhttp::status::ok,
        api::completion_json(id, created, model, finished->text, end.finish_reason, end.usage,
                             end.speculation, logprobs)));
  }
}

}  // namespace tandem
