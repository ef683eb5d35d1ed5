// POST /v1/completions: parse, tokenize each prompt, check against the
// model, fan out into one job per sequence (choice_jobs.cpp), then the job
// flow both completion routes share (job_flow.h). make_job, the request as
// the engine takes it, is the chat route's too.
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "coordinator/api/choices.h"
#include "coordinator/api/completion_response.h"
#include "coordinator/api/coupling_choice.h"
#include "coordinator/api/token_logprobs.h"
#include "coordinator/server/api_service.h"
#include "coordinator/server/job_flow.h"
#include "workers/kv_block_pool.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

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

std::vector<int32_t> ApiService::prompt_tokens(const api::Prompt& prompt) const {
  if (const auto* text = std::get_if<std::string>(&prompt)) {
    std::vector<int32_t> ids = tokenizer_->encode(*text, /*add_special=*/true);
    if (ids.empty()) throw api::invalid_request("prompt", "the prompt encodes to no tokens");
    return ids;
  }
  return std::get<std::vector<int32_t>>(prompt);
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
  engine_request.sampling.seed = api::choice_seed(request.seed, 0);
  engine_request.sampling.min_p = static_cast<float>(request.min_p);
  // Seeded or not is the request's, so every choice of it runs the same
  // coupling (choice_jobs only changes the seed).
  engine_request.sampling.coupling = api::resolve_coupling({.requested = request.speculation.coupling,
                                                            .deployed = settings_.coupling,
                                                            .seeded = request.seed.has_value(),
                                                            .lenience = settings_.lenience});
  engine_request.processing = request.processing;
  if (request.processing.min_tokens > request.max_tokens)
    throw api::invalid_request("min_tokens", "Invalid 'min_tokens': " +
                                                 std::to_string(request.processing.min_tokens) +
                                                 " is more than max_tokens (" +
                                                 std::to_string(request.max_tokens) + ").");
  // As the engine's types (the routes' readers checked each field; this
  // covers the deployment's defaults too): the engine would refuse it.
  if (const std::optional<SamplingProblem> problem = find_sampling_problem(engine_request.sampling))
    throw api::invalid_request(problem->field, "Invalid '" + problem->field + "': " + problem->message);
  if (!request.ignore_eos) engine_request.stop_ids = model_.stop_ids;
  // vLLM's stop_token_ids end the completion whether or not ignore_eos is set.
  for (int32_t id : request.stop_token_ids)
    if (std::find(engine_request.stop_ids.begin(), engine_request.stop_ids.end(), id) ==
        engine_request.stop_ids.end())
      engine_request.stop_ids.push_back(id);
  engine_request.lenience = settings_.lenience;
  engine_request.cache_salt = cache_salt_hash(request.cache_salt);

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

// The completions stream: text_completion chunks, each naming its choice.
class CompletionEvents final : public EventFormat {
 public:
  CompletionEvents(std::string id, int64_t created, std::string model, bool include_usage, int per_prompt,
                   bool logprobs)
      : id_(std::move(id)), created_(created), model_(std::move(model)), include_usage_(include_usage),
        per_prompt_(per_prompt), logprobs_(logprobs) {}

  std::vector<std::string> text(int index, const std::string& piece,
                                std::vector<api::LogprobEntry> logprobs) override {
    const api::OrderedJson shown =
        logprobs_ ? api::completion_logprobs_json(logprobs) : api::OrderedJson(nullptr);
    return {api::chunk_json(id_, created_, model_, piece, std::nullopt, include_usage_, index, shown)};
  }
  std::vector<std::string> finish(int index, const CompletionEnd& end) override {
    return {api::chunk_json(id_, created_, model_, "", end.finish_reason, include_usage_, index)};
  }
  std::vector<std::string> last(const std::vector<CompletionEnd>& ends) override {
    if (!include_usage_) return {};
    const RequestTotals totals = request_totals(ends, per_prompt_);
    return {api::usage_chunk_json(id_, created_, model_, totals.usage, totals.speculation)};
  }

 private:
  std::string id_;
  int64_t created_;
  std::string model_;
  bool include_usage_;
  int per_prompt_;
  bool logprobs_;
};

// The whole response's choices: per prompt, its `per_prompt` sequences, or
// the n of them best_of ranks highest, best first; index = prompt × n + choice.
// `show_logprobs`: whether the request asked to see them.
std::vector<api::CompletionChoice> returned_choices(const std::vector<FinishedJob>& finished,
                                                    int per_prompt, int n, bool show_logprobs) {
  std::vector<api::CompletionChoice> choices;
  for (size_t first = 0; first < finished.size(); first += static_cast<size_t>(per_prompt)) {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);  // best_of = n: every one, in seed order
    if (per_prompt > n) {
      std::vector<std::optional<double>> logprobs;
      for (int i = 0; i < per_prompt; ++i) logprobs.push_back(finished[first + static_cast<size_t>(i)].end.cumulative_logprob);
      order = api::rank_best_of(logprobs, n);
    }
    for (const int i : order) {
      const FinishedJob& job = finished[first + static_cast<size_t>(i)];
      choices.push_back({job.text, job.end.finish_reason,
                         show_logprobs ? api::completion_logprobs_json(job.logprobs)
                                  : api::OrderedJson(nullptr)});
    }
  }
  return choices;
}

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
  std::vector<CompletionJob> jobs;
  if (engine_loop) {
    try {
      request = api::parse_completion_request(http_request.body(), settings_.limits);
      std::vector<std::vector<int32_t>> prompts;
      for (const api::Prompt& prompt : request.prompts) prompts.push_back(prompt_tokens(prompt));
      jobs = choice_jobs(request, prompts, request.best_of.value_or(request.n));
    } catch (const api::ApiError& error) {
      rejection = error;
    } catch (const Error& error) {
      rejection = api::invalid_request(std::nullopt, error.what());
    }
  }
  const std::optional<RunningJobs> running = co_await admit(exchange, engine_loop, rejection, jobs);
  if (!running) co_return;

  const std::string id = api::new_completion_id();
  const int64_t created = unix_now();
  const std::string& model = settings_.served_model_name;
  const int per_prompt = request.best_of.value_or(request.n);
  if (request.stream) {  // best_of = n here (check_choice_counts)
    CompletionEvents events(id, created, model, request.include_usage, per_prompt,
                            request.logprobs >= 0);
    co_await stream_jobs(exchange, *running, events);
    co_return;
  }
  const std::optional<CollectedJobs> collected = co_await collect_jobs(exchange, *running);
  if (!collected) co_return;
  if (collected->error) {
    co_await exchange.respond(error_response(http_request, *collected->error));
    co_return;
  }
  const RequestTotals totals = request_totals(collected->jobs, per_prompt);
  co_await exchange.respond(http::make_response(
      http_request, bhttp::status::ok,
      api::completion_json(id, created, model, returned_choices(collected->jobs, per_prompt, request.n,
                                                            request.logprobs >= 0),
                           totals.usage, totals.speculation)));
}

}  // namespace tandem
