#include "workers/speculation/speculative_engine.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sessions whose best γ is 0 still draft one token every this many steps,
// so that their α estimate can recover if the text becomes predictable.
constexpr int kProbeEvery = 8;

}  // namespace

struct SpeculativeEngine::Session {
  SessionKey key = 0;
  SpeculationRequest request;
  std::vector<int32_t> tokens;  // prompt + generated
  int prompt_length = 0;
  SequenceId seq = 0;           // target KV: holds positions [0, tokens.size() - 1)
  SpeculationResult result;
  int steps_at_zero_gamma = 0;

  int generated() const { return static_cast<int>(tokens.size()) - prompt_length; }
  bool running() const { return result.finish == FinishReason::running; }
};

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
  }
  return "unknown";
}

SpeculativeEngine::SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                                     Drafter& drafter)
    : target_(target), cache_(target_cache), drafter_(drafter) {}

SpeculativeEngine::~SpeculativeEngine() {
  for (auto& [key, session] : sessions_) {
    if (session->running()) {
      cache_.release(session->seq);
      drafter_.release(key);
    }
  }
}

SessionKey SpeculativeEngine::add(SpeculationRequest request) {
  const ModelConfig& config = target_.config();
  require(!request.prompt.empty(), ErrorKind::invalid_argument,
          "prompt: empty (give at least one token)");
  for (int32_t token : request.prompt)
    require(token >= 0 && token < config.vocab_size, ErrorKind::invalid_argument,
            "prompt: token id " + std::to_string(token) + " outside the vocabulary [0, " +
                std::to_string(config.vocab_size) + ")");
  require(static_cast<int>(request.prompt.size()) < config.max_position_embeddings,
          ErrorKind::invalid_argument,
          "prompt: " + std::to_string(request.prompt.size()) +
              " tokens leave no room in the model's context of " +
              std::to_string(config.max_position_embeddings));
  require(request.max_new_tokens >= 1, ErrorKind::invalid_argument, "max_tokens: must be >= 1");
  require(request.lenience > 0.0f && request.lenience <= 1.0f, ErrorKind::invalid_argument,
          "lenience: must be in (0, 1] (1 = lossless)");
  require(request.gamma.gamma >= 0 && request.gamma.gamma <= 64, ErrorKind::invalid_argument,
          "gamma: must be in [0, 64]");

  auto session = std::make_unique<Session>();
  session->key = next_key_++;
  session->prompt_length = static_cast<int>(request.prompt.size());
  session->tokens = request.prompt;
  session->request = std::move(request);
  session->seq = cache_.create_sequence();
  const SessionKey key = session->key;
  sessions_.emplace(key, std::move(session));
  return key;
}

void SpeculativeEngine::finish(Session& session, FinishReason reason) {
  session.result.finish = reason;
  cache_.release(session.seq);
  drafter_.release(session.key);
}

int SpeculativeEngine::choose_gamma(Session& s) {
  const SpeculationStats& stats = s.result.stats;
  int gamma = s.request.gamma.choose(stats.beta_sum, stats.beta_count, cost_ratio_);
  if (s.request.gamma.automatic && gamma == 0 && ++s.steps_at_zero_gamma % kProbeEvery == 0)
    gamma = 1;
  // Each step emits at least one token, so drafting past max_tokens - 1 more
  // (or past the context) would only be thrown away.
  const int length = static_cast<int>(s.tokens.size());
  gamma = std::min({gamma, s.request.max_new_tokens - s.generated() - 1,
                    target_.config().max_position_embeddings - length});
  s.result.stats.last_gamma = std::max(gamma, 0);
  return gamma;
}

void SpeculativeEngine::commit(Session& s, std::span<const int32_t> accepted, int32_t token) {
  std::vector<int32_t> emitted(accepted.begin(), accepted.end());
  emitted.push_back(token);
  const auto& stops = s.request.stop_ids;
  for (int32_t t : emitted) {
    s.tokens.push_back(t);
    s.result.tokens.push_back(t);
    FinishReason reason = FinishReason::running;
    if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
      reason = FinishReason::stop;
    } else if (s.generated() >= s.request.max_new_tokens) {
      reason = FinishReason::length;
    } else if (static_cast<int>(s.tokens.size()) >= target_.config().max_position_embeddings) {
      reason = FinishReason::context;
    }
    if (reason != FinishReason::running) return finish(s, reason);
  }
  // Keep the target's K/V for committed tokens but the last (fed next step).
  const int committed = static_cast<int>(s.tokens.size());
  cache_.truncate(s.seq, std::min(cache_.length(s.seq), committed - 1));
  drafter_.commit(s.key, committed);
}

void SpeculativeEngine::step() {
  std::vector<Session*> batch;
  for (auto& [key, session] : sessions_)
    if (session->running()) batch.push_back(session.get());
  if (batch.empty()) return;
  const int V = target_.config().vocab_size;

  // 1. Draft: γ per session from its policy, never past what it may still emit.
  std::vector<DraftRequest> requests;
  std::vector<size_t> requester;  // batch index of each request
  for (size_t i = 0; i < batch.size(); ++i) {
    Session& s = *batch[i];
    const int gamma = choose_gamma(s);
    if (gamma > 0) {
      requests.push_back({s.key, s.tokens, gamma, s.request.sampling});
      requester.push_back(i);
    }
  }
  std::vector<DraftProposal> proposals(batch.size());
  double draft_seconds = 0;
  int draft_passes = 0;
  if (!requests.empty()) {
    std::vector<DraftProposal> answered;
    drafter_.propose(requests, answered);
    draft_seconds = drafter_.last_seconds();
    for (size_t r = 0; r < requests.size(); ++r) {
      proposals[requester[r]] = std::move(answered[r]);
      draft_passes = std::max(draft_passes, static_cast<int>(proposals[requester[r]].tokens.size()));
    }
  }

  // 2. Verify: one ragged target pass over catch-up tokens and drafts.
  std::vector<std::vector<int32_t>> feeds(batch.size());
  std::vector<SequenceStep> steps;
  std::vector<int> first_row(batch.size());
  int rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Session& s = *batch[i];
    const int gamma = static_cast<int>(proposals[i].tokens.size());
    const int length = static_cast<int>(s.tokens.size());
    feeds[i].assign(s.tokens.begin() + cache_.length(s.seq), s.tokens.end());
    feeds[i].insert(feeds[i].end(), proposals[i].tokens.begin(), proposals[i].tokens.end());
    require(cache_.reserve(s.seq, length + gamma), ErrorKind::out_of_resources,
            "target KV cache is full: raise the number of KV blocks or lower concurrency");
    steps.push_back({s.seq, feeds[i], gamma + 1});
    first_row[i] = rows;
    rows += gamma + 1;
  }
  const auto verify_start = Clock::now();
  const float* logits = target_.forward(steps, cache_);
  Backend& backend = target_.backend();

  // 3. Accept: greedy sessions compare argmaxes; sampled ones run Algorithm 1
  // on standardized rows.
  if (probs_.size() < static_cast<size_t>(rows) * V) probs_ = backend.allocate(static_cast<size_t>(rows) * V);
  std::vector<int32_t> argmaxes(static_cast<size_t>(rows));
  std::vector<VerifyBlock> sampled;
  std::vector<GreedyBlock> greedy;
  std::vector<size_t> sampled_of, greedy_of;
  int sampled_drafts = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Session& s = *batch[i];
    const int gamma = static_cast<int>(proposals[i].tokens.size());
    const size_t offset = static_cast<size_t>(first_row[i]) * V;
    if (s.request.sampling.greedy()) {
      backend.argmax(logits + offset, gamma + 1, V, argmaxes.data() + first_row[i]);
      greedy.push_back({gamma, proposals[i].tokens.data(), argmaxes.data() + first_row[i]});
      greedy_of.push_back(i);
    } else {
      backend.standardize(logits + offset, gamma + 1, V, std::span(&s.request.sampling, 1),
                          probs_.data() + offset);
      const bool has_q = !proposals[i].q.empty();
      sampled.push_back({gamma, proposals[i].tokens.data(), probs_.data() + offset,
                         has_q ? proposals[i].q.data() : nullptr,
                         static_cast<int64_t>(s.tokens.size()), s.request.sampling.seed,
                         s.request.lenience});
      sampled_of.push_back(i);
      sampled_drafts += gamma;
    }
  }
  std::vector<VerifyOutcome> outcomes(batch.size());
  std::vector<VerifyOutcome> sampled_out(sampled.size()), greedy_out(greedy.size());
  std::vector<float> betas(static_cast<size_t>(sampled_drafts));
  if (!sampled.empty()) backend.verify(sampled, V, sampled_out, betas);
  if (!greedy.empty()) backend.verify_greedy(greedy, greedy_out);
  const double target_seconds = seconds_since(verify_start);

  // 4. Commit.
  size_t beta_at = 0;
  for (size_t k = 0; k < sampled.size(); ++k) {
    SpeculationStats& stats = batch[sampled_of[k]]->result.stats;
    for (int j = 0; j < sampled[k].gamma; ++j) stats.beta_sum += betas[beta_at++];
    stats.beta_count += sampled[k].gamma;
    outcomes[sampled_of[k]] = sampled_out[k];
  }
  for (size_t k = 0; k < greedy.size(); ++k) {
    // At temperature 0, β_j = Σ min(p_j, q_j) of one-hot rows: 1 if they agree.
    SpeculationStats& stats = batch[greedy_of[k]]->result.stats;
    for (int j = 0; j < greedy[k].gamma; ++j)
      stats.beta_sum += greedy[k].target_argmax[j] == greedy[k].drafted[j];
    stats.beta_count += greedy[k].gamma;
    outcomes[greedy_of[k]] = greedy_out[k];
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    Session& s = *batch[i];
    const VerifyOutcome& outcome = outcomes[i];
    SpeculationStats& stats = s.result.stats;
    stats.target_steps += 1;
    stats.draft_tokens += static_cast<int>(proposals[i].tokens.size());
    stats.accepted_tokens += outcome.accepted;
    stats.draft_seconds += draft_seconds;
    stats.target_seconds += target_seconds;

    commit(s, std::span(proposals[i].tokens).first(static_cast<size_t>(outcome.accepted)),
           outcome.token);
  }

  // c: one draft pass over one target pass, a running mean over steps that drafted.
  if (draft_passes > 0 && target_seconds > 0) {
    const double sample = draft_seconds / draft_passes / target_seconds;
    ++cost_samples_;
    cost_ratio_ += (sample - cost_ratio_) / std::min(cost_samples_, 50);
  }
}

void SpeculativeEngine::run_to_completion() {
  while (running() > 0) step();
}

bool SpeculativeEngine::finished(SessionKey session) const {
  auto it = sessions_.find(session);
  require(it != sessions_.end(), ErrorKind::invalid_argument,
          "unknown session " + std::to_string(session));
  return !it->second->running();
}

const std::vector<int32_t>& SpeculativeEngine::output(SessionKey session) const {
  auto it = sessions_.find(session);
  require(it != sessions_.end(), ErrorKind::invalid_argument,
          "unknown session " + std::to_string(session));
  return it->second->result.tokens;
}

SpeculationResult SpeculativeEngine::take(SessionKey session) {
  auto it = sessions_.find(session);
  require(it != sessions_.end(), ErrorKind::invalid_argument,
          "unknown session " + std::to_string(session));
  Session& s = *it->second;
  if (s.running()) finish(s, FinishReason::cancelled);  // frees its caches now
  SpeculationResult result = std::move(s.result);
  sessions_.erase(it);
  return result;
}

size_t SpeculativeEngine::running() const {
  return static_cast<size_t>(std::count_if(sessions_.begin(), sessions_.end(),
                                           [](const auto& kv) { return kv.second->running(); }));
}

}  // namespace tandem
