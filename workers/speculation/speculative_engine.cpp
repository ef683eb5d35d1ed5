// SpeculativeEngine: construction, requests in and out, and step(), which
// runs the step protocol over the engine's parts (speculative_engine.h).
// Step 5, commit, is in speculative_commit.cpp; calibration in
// speculative_calibration.cpp.
#include "workers/speculation/speculative_engine.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/error.h"
#include "workers/speculation/logprob_rows.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {
namespace {

// The options, checked before any part is built from them.
EngineOptions checked(EngineOptions options, const std::vector<Drafter*>& drafters) {
  require(!drafters.empty(), ErrorKind::invalid_argument,
          "speculative engine needs at least one drafter (NoDrafter for plain decoding)");
  require(options.max_running >= 1, ErrorKind::invalid_argument,
          "max_running must be >= 1, got " + std::to_string(options.max_running));
  require(options.step_token_budget >= 1, ErrorKind::invalid_argument,
          "step_token_budget must be >= 1, got " + std::to_string(options.step_token_budget));
  return options;
}

}  // namespace

SpeculativeEngine::SpeculativeEngine(const ModelConfig& target_config, PagedKvCache& target_cache,
                                     std::unique_ptr<TargetExecutor> owned_target,
                                     TargetExecutor* target, const std::vector<Drafter*>& drafters,
                                     EngineOptions options)
    : config_(target_config),
      options_(checked(options, drafters)),
      kv_(target_cache),
      owned_target_(std::move(owned_target)),
      target_(target ? *target : *owned_target_, kv_, config_),
      drafting_(drafters),
      gamma_(options_.tuning, config_.max_position_embeddings),
      pipelining_(drafting_, gamma_, config_.vocab_size),
      planner_(kv_, options_) {}

SpeculativeEngine::SpeculativeEngine(const ModelConfig& target_config, PagedKvCache& target_cache,
                                     TargetExecutor& target, std::vector<Drafter*> drafters,
                                     EngineOptions options)
    : SpeculativeEngine(target_config, target_cache, nullptr, &target, drafters, options) {}

SpeculativeEngine::SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                                     std::vector<Drafter*> drafters, EngineOptions options)
    : SpeculativeEngine(target.config(), target_cache,
                        std::make_unique<TargetStepRunner>(target, target_cache,
                                                           TargetStepRunner::CacheMode::shared),
                        nullptr, drafters, options) {}

SpeculativeEngine::SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                                     Drafter& drafter, EngineOptions options)
    : SpeculativeEngine(target, target_cache, std::vector<Drafter*>{&drafter}, options) {}

SpeculativeEngine::~SpeculativeEngine() = default;  // the planner frees the running sessions' KV

void SpeculativeEngine::step() {
  last_step_ = StepReport{};
  // 1. Admit and plan: who joins, each session's chunk and γ, the KV for them.
  planner_.admit();
  if (planner_.running().empty()) return;
  const auto start = Clock::now();
  StepPlan plan = plan_step();
  planner_.reserve(plan, last_step_);
  // 2. Draft the blocks to verify now; pipelined drafts start, to run
  // during the target pass where the drafter can.
  drafting_.draft(plan, last_step_);
  end_faulted_drafts(plan);
  pipelining_.begin(plan, last_step_);
  // 3. Verify: one ragged target pass.
  bool ran = false;
  try {
    ran = target_.verify(plan, last_step_);
  } catch (...) {
    // Collect what is in flight, so a drafter is never left between begin
    // and finish; the target's failure is the one to report.
    try {
      pipelining_.finish(last_step_);
    } catch (...) {
    }
    throw;
  }
  pipelining_.finish(last_step_);
  // 4. Accept: the verification outcomes into the sessions.
  if (ran) {
    gamma_.record_pass(last_step_.target_tokens, plan.target_seconds);
    target_.accept(plan);
    // 5. Commit: tokens appended, stop rules, KV truncated to the prefix.
    commit(plan);
  }
  pipelining_.keep_ready_blocks(plan, last_step_);
  drafting_.record_costs(plan, last_step_);
  last_step_.shape = plan.shape;
  last_step_.step_seconds = seconds_since(start);
  gamma_.record_step(plan.batch, last_step_);
  last_step_.measured_speedup = gamma_.measured_speedup(plan.batch);
}

StepPlan SpeculativeEngine::plan_step() {
  const std::vector<EngineSession*>& running = planner_.running();
  StepPlan plan;
  plan.batch = static_cast<int>(running.size());
  gamma_.begin_step(running, drafting_.slots());
  pipelining_.plan(running, plan);
  planner_.plan(plan, [this](EngineSession& s, StepPlan::Entry& entry) {
    if (s.ready) {
      // Drafted in an earlier step, under the same caps (it was the γ its
      // policy chose then): verified as it is.
      entry.gamma = static_cast<int>(s.ready->proposal.tokens.size());
      entry.from_ready = true;
      return;
    }
    const GammaChoice choice = gamma_.choose(s);
    entry.gamma = choice.gamma;
    entry.policy_zero = choice.policy_zero;
    entry.probe = choice.probe;
  });
  double predicted = 0;
  int verifying = 0;
  for (const StepPlan::Entry& e : plan.entries) {
    if (!e.chunk.verifies) continue;
    predicted += gamma_.predicted_speedup(*e.session, e.gamma);
    ++verifying;
  }
  last_step_.predicted_speedup = verifying > 0 ? predicted / verifying : 0.0;
  return plan;
}

void SpeculativeEngine::end_faulted_drafts(StepPlan& plan) {
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped || e.proposal.fault == SessionFault::none) continue;
    e.dropped = true;  // out of the target pass; the others' blocks are as they were
    fail(*e.session, e.proposal.fault);
  }
}

void SpeculativeEngine::fail(EngineSession& session, SessionFault fault) {
  session.result.error = session_fault_error(fault, session.request.sampling);
  planner_.finish(session, FinishReason::failed);  // frees its KV now
}

void SpeculativeEngine::run_to_completion() {
  while (!planner_.running().empty() || !planner_.waiting().empty()) step();
}

void SpeculativeEngine::check(const SpeculationRequest& request) const {
  const ModelConfig& config = config_;
  const PagedKvCache& cache = kv_.cache();
  require(!request.prompt.empty(), ErrorKind::invalid_argument,
          "prompt: empty (give at least one token)");
  for (int32_t token : request.prompt)
    require(token >= 0 && token < config.vocab_size, ErrorKind::invalid_argument, [&] {
      return "prompt: token id " + std::to_string(token) + " outside the vocabulary [0, " +
             std::to_string(config.vocab_size) + ")";
    });
  const int length = static_cast<int>(request.prompt.size());
  require(length < config.max_position_embeddings, ErrorKind::invalid_argument, [&] {
    return "prompt: " + std::to_string(length) + " tokens leave no room in the model's context of " +
           std::to_string(config.max_position_embeddings);
  });
  const int cache_positions = cache.num_blocks() * cache.block_size();
  require(length <= cache_positions, ErrorKind::invalid_argument, [&] {
    return "prompt: " + std::to_string(length) + " tokens can never fit in the target KV cache (" +
           std::to_string(cache_positions) +
           " positions): shorten it or raise scheduler.kv_blocks";
  });
  // 0 only scores the prompt (echo with max_tokens 0): it is prefilled, then ends.
  require(request.max_new_tokens >= 1 || (request.max_new_tokens == 0 && request.prompt_logprobs),
          ErrorKind::invalid_argument,
          "max_tokens: must be >= 1 (0 only when the prompt's logprobs are asked for)");
  require(request.logprobs >= -1 && request.logprobs <= kMaxTopLogprobs,
          ErrorKind::invalid_argument,
          "logprobs: must be in [0, " + std::to_string(kMaxTopLogprobs) + "] (or -1: none)");
  // Alone, a session holds its tokens but the last (never fed) in the
  // cache, up to the context; checked here so that it is refused, never
  // cut short (step_planner.h). Sessions that fit alone but not beside
  // others wait or are preempted instead.
  // (Scoring a prompt alone feeds every token of it, as one new token would.)
  const int64_t tokens = std::min<int64_t>(int64_t{length} + std::max(request.max_new_tokens, 1),
                                           config.max_position_embeddings);
  require(tokens - 1 <= cache_positions, ErrorKind::invalid_argument, [&] {
    return "max_tokens: the prompt (" + std::to_string(length) + " tokens) and max_tokens (" +
           std::to_string(request.max_new_tokens) + ") need " + std::to_string(tokens - 1) +
           " positions of the target KV cache, which holds " + std::to_string(cache_positions) +
           " even with no other request: lower max_tokens or raise scheduler.kv_blocks";
  });
  if (const std::optional<SamplingProblem> problem = find_sampling_problem(request.sampling))
    throw Error(ErrorKind::invalid_argument, problem->field + ": " + problem->message);
  if (const std::optional<SamplingProblem> problem =
          find_processing_problem(request.processing, config.vocab_size))
    throw Error(ErrorKind::invalid_argument, problem->field + ": " + problem->message);
  for (int32_t token : request.processing.min_tokens > 0 ? request.stop_ids : std::vector<int32_t>{})
    require(token >= 0 && token < config.vocab_size, ErrorKind::invalid_argument, [&] {
      return "stop_token_ids: token id " + std::to_string(token) + " outside the vocabulary [0, " +
             std::to_string(config.vocab_size) + ")";
    });
  require(request.lenience > 0.0f && request.lenience <= 1.0f, ErrorKind::invalid_argument,
          "lenience: must be in (0, 1] (1 = lossless)");
  // A gumbel draft is kept iff it is the target's own token: there is no
  // test to be lenient in (greedy sessions ignore the coupling).
  require(request.lenience == 1.0f || request.sampling.greedy() ||
              request.sampling.coupling != Coupling::gumbel,
          ErrorKind::invalid_argument,
          "lenience: must be 1 with the gumbel coupling (lenient verification is the rejection "
          "coupling's)");
  require(request.gamma.gamma >= 0 && request.gamma.gamma <= 64, ErrorKind::invalid_argument,
          "gamma: must be in [0, 64]");
  drafting_.index_of(request.drafter);  // throws naming the drafters there are
}

SessionKey SpeculativeEngine::add(SpeculationRequest request) {
  check(request);
  auto session = std::make_unique<EngineSession>();
  session->key = next_key_++;
  session->prompt_length = static_cast<int>(request.prompt.size());
  session->tokens = request.prompt;
  LogitProcessing& processing = request.processing;
  processing.prompt_length = session->prompt_length;
  processing.masked_stop_ids = processing.min_tokens > 0 ? request.stop_ids : std::vector<int32_t>{};
  session->drafter = drafting_.index_of(request.drafter);
  session->draft = drafting_.slots()[session->drafter].drafter;
  session->request = std::move(request);
  EngineSession* s = session.get();
  sessions_.emplace(s->key, std::move(session));
  planner_.queue(*s);
  return s->key;
}

EngineSession& SpeculativeEngine::get(SessionKey session) const {
  auto it = sessions_.find(session);
  require(it != sessions_.end(), ErrorKind::invalid_argument,
          [&] { return "unknown session " + std::to_string(session); });
  return *it->second;
}

SessionState SpeculativeEngine::state(SessionKey session) const { return get(session).state; }

int SpeculativeEngine::prompt_length(SessionKey session) const {
  return get(session).prompt_length;
}

const std::vector<int32_t>& SpeculativeEngine::output(SessionKey session) const {
  return get(session).result.tokens;
}

const std::vector<TokenLogprob>& SpeculativeEngine::output_logprobs(SessionKey session) const {
  return get(session).result.logprobs;
}

const std::vector<TokenLogprob>& SpeculativeEngine::prompt_logprobs(SessionKey session) const {
  return get(session).result.prompt_logprobs;
}

FinishReason SpeculativeEngine::finish_reason(SessionKey session) const {
  return get(session).result.finish;
}

SpeculationResult SpeculativeEngine::take(SessionKey session) {
  EngineSession& s = get(session);
  if (s.state != SessionState::finished) planner_.finish(s, FinishReason::cancelled);  // frees its KV now
  SpeculationResult result = std::move(s.result);
  sessions_.erase(session);
  return result;
}

double SpeculativeEngine::cost_ratio(const std::string& drafter) const {
  for (const DrafterSlot& d : drafting_.slots())
    if (d.name == drafter) return d.cost_ratio;
  throw Error(ErrorKind::invalid_argument, "unknown drafter '" + drafter + "'");
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::running:
      return "running";
    case FinishReason::length:
      return "length";
    case FinishReason::stop:
      return "stop";
    case FinishReason::context:
      return "context";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::failed:
      return "failed";
  }
  return "unknown";
}

const char* session_state_name(SessionState state) {
  switch (state) {
    case SessionState::waiting:
      return "waiting";
    case SessionState::running:
      return "running";
    case SessionState::finished:
      return "finished";
  }
  return "unknown";
}

}  // namespace tandem
