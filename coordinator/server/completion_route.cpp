// POST /v1/completions: parse, tokenize, check against the model, hand the
// job to the engine loop, then wait for its text without blocking a thread:
// the connection's coroutine sleeps on a timer that the engine thread's
// wake-up cancels, and looks at the socket every few tens of milliseconds
// so that a client that hangs up cancels its session.
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <random>

#include "common/error.h"
#include "coordinator/api/completion_response.h"
#include "coordinator/server/api_service.h"

namespace tandem {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// How often a waiting request checks whether its client is still there.
constexpr std::chrono::milliseconds kPeerCheckInterval{50};

uint64_t random_seed() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

std::string gamma_policy_name(const GammaPolicy& policy, const std::string& drafter) {
  if (drafter == "none") return "off";
  return policy.automatic ? "auto" : std::to_string(policy.gamma);
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

api::ApiError context_exceeded(std::string param, std::string message) {
  api::ApiError error = api::invalid_request(std::move(param), std::move(message));
  error.code = "context_length_exceeded";
  return error;
}

// Sleeps until woken by the engine thread or the interval passes.
asio::awaitable<void> wait_for_news(asio::steady_timer& timer) {
  timer.expires_after(kPeerCheckInterval);
  boost::system::error_code ignored;  // operation_aborted: woken early
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace

CompletionJob ApiService::make_job(const api::CompletionRequest& request,
                                   const Tokenizer& tokenizer) const {
  CompletionJob job;
  SpeculationRequest& engine_request = job.request;
  if (const auto* text = std::get_if<std::string>(&request.prompt)) {
    engine_request.prompt = tokenizer.encode(*text, /*add_special=*/true);
    if (engine_request.prompt.empty())
      throw api::invalid_request("prompt", "the prompt encodes to no tokens");
  } else {
    engine_request.prompt = std::get<std::vector<int32_t>>(request.prompt);
  }
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
  engine_request.max_new_tokens = request.max_tokens;
  engine_request.sampling.temperature = static_cast<float>(request.temperature);
  engine_request.sampling.top_p = static_cast<float>(request.top_p);
  engine_request.sampling.top_k = request.top_k;
  engine_request.sampling.seed = request.seed.value_or(random_seed());
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

asio::awaitable<void> ApiService::complete(http::Exchange& exchange) {
  const http::Request& http_request = exchange.request();
  EngineLoop* engine_loop = engine_loop_.load();
  if (!engine_loop || draining_.load()) {
    co_await exchange.respond(error_response(
        http_request, api::unavailable(engine_loop ? "the server is shutting down"
                                                 : "the models are still loading; see GET /ready")));
    co_return;
  }

  std::optional<api::ApiError> rejection;
  api::CompletionRequest request;
  CompletionJob job;
  try {
    request = api::parse_completion_request(http_request.body(), settings_.limits);
    job = make_job(request, *tokenizer_);
  } catch (const api::ApiError& error) {
    rejection = error;
  } catch (const Error& error) {
    rejection = api::invalid_request(std::nullopt, error.what());
  }
  if (rejection) {
    co_await exchange.respond(error_response(http_request, *rejection));
    co_return;
  }

  auto timer = std::make_shared<asio::steady_timer>(exchange.executor());
  auto wake = [timer, executor = exchange.executor()] {
    asio::post(executor, [timer] { timer->cancel(); });
  };
  job.stream = std::make_shared<CompletionStream>(wake);
  std::shared_ptr<CompletionStream> stream = job.stream;
  if (!engine_loop->submit(job)) {
    co_await exchange.respond(error_response(
        http_request, api::rate_limited("the request queue is full (scheduler.max_queued_requests); "
                                        "retry after a moment")));
    co_return;
  }

  const std::string id = api::new_completion_id();
  const int64_t created = unix_now();
  const std::string& model = settings_.served_model_name;
  std::string text;
  std::optional<CompletionEnd> end;

  if (!request.stream) {
    while (!end) {
      CompletionStream::Drained drained = stream->drain();
      text += drained.text;
      end = std::move(drained.end);
      if (end) break;
      if (exchange.peer_closed()) {
        stream->cancel();
        co_return;
      }
      co_await wait_for_news(*timer);
    }
    if (end->error) {
      co_await exchange.respond(error_response(http_request, *end->error));
    } else {
      co_await exchange.respond(http::make_response(
          http_request, bhttp::status::ok,
          api::completion_json(id, created, model, text, end->finish_reason, end->usage,
                               end->speculation)));
    }
    co_return;
  }

  // Streaming: chunks as text arrives, a last chunk with the finish reason,
  // usage when asked for, then [DONE].
  bool connected = co_await exchange.begin_stream();
  while (connected) {
    CompletionStream::Drained drained = stream->drain();
    if (!drained.text.empty()) {
      connected = co_await exchange.stream_write(
          api::sse_event(api::chunk_json(id, created, model, drained.text, std::nullopt,
                                                         request.include_usage)));
    }
    if (drained.end && connected) {
      end = std::move(drained.end);
      if (end->error) {
        co_await exchange.stream_write(api::sse_event(api::error_json(*end->error)));
      } else {
        co_await exchange.stream_write(
            api::sse_event(api::chunk_json(id, created, model, "", end->finish_reason,
                                                       request.include_usage)));
        if (request.include_usage)
          co_await exchange.stream_write(api::sse_event(
              api::usage_chunk_json(id, created, model, end->usage, end->speculation)));
      }
      co_await exchange.stream_write(api::sse_done());
      co_await exchange.end_stream();
      co_return;
    }
    if (!connected || exchange.peer_closed()) break;
    co_await wait_for_news(*timer);
  }
  stream->cancel();  // the client left: the engine thread frees its session
}

}  // namespace tandem
