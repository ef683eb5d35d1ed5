// SpeculativeEngine: construction, requests in and out, admission and
// preemption. One step's work is in speculative_step.cpp, calibration in
// speculative_calibration.cpp.
#include "workers/speculation/speculative_engine.h"

#include <algorithm>
#include <set>
#include <string>

#include "common/error.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/step_scheduling.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {

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

SpeculativeEngine::SpeculativeEngine(const ModelConfig& target_config,
                                     PagedKvCache& target_cache, TargetExecutor& target,
                                     std::vector<Drafter*> drafters, EngineLimits limits)
    : config_(target_config), cache_(target_cache), target_(&target), limits_(limits) {
  init(std::move(drafters));
}

SpeculativeEngine::SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                                     std::vector<Drafter*> drafters, EngineLimits limits)
    : config_(target.config()),
      cache_(target_cache),
      owned_target_(std::make_unique<TargetStepRunner>(target, target_cache,
                                                       TargetStepRunner::CacheMode::shared)),
      target_(owned_target_.get()),
      limits_(limits) {
  init(std::move(drafters));
}

void SpeculativeEngine::init(std::vector<Drafter*> drafters) {
  require(!drafters.empty(), ErrorKind::invalid_argument,
          "speculative engine needs at least one drafter (NoDrafter for plain decoding)");
  require(limits_.max_running >= 1, ErrorKind::invalid_argument,
          "max_running must be >= 1, got " + std::to_string(limits_.max_running));
  require(limits_.step_token_budget >= 1, ErrorKind::invalid_argument,
          "step_token_budget must be >= 1, got " + std::to_string(limits_.step_token_budget));
  std::set<std::string> names;
  for (Drafter* drafter : drafters) {
    require(drafter != nullptr, ErrorKind::invalid_argument, "drafter list holds a null drafter");
    std::string name = drafter->name();
    require(names.insert(name).second, ErrorKind::invalid_argument,
            "two drafters are named '" + name + "': drafter names must be unique");
    DrafterSlot slot;
    slot.drafter = drafter;
    slot.name = std::move(name);
    drafters_.push_back(std::move(slot));
  }
}

SpeculativeEngine::SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                                     Drafter& drafter, EngineLimits limits)
    : SpeculativeEngine(target, target_cache, std::vector<Drafter*>{&drafter}, limits) {}

SpeculativeEngine::~SpeculativeEngine() {
  for (Session* s : running_) release_kv(*s);
}

void SpeculativeEngine::check(const SpeculationRequest& request) const {
  const ModelConfig& config = config_;
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
  const int cache_positions = cache_.num_blocks() * cache_.block_size();
  require(length <= cache_positions, ErrorKind::invalid_argument, [&] {
    return "prompt: " + std::to_string(length) + " tokens can never fit in the target KV cache (" +
           std::to_string(cache_positions) + " positions): shorten it or raise the KV blocks";
  });
  require(request.max_new_tokens >= 1, ErrorKind::invalid_argument, "max_tokens: must be >= 1");
  require(request.lenience > 0.0f && request.lenience <= 1.0f, ErrorKind::invalid_argument,
          "lenience: must be in (0, 1] (1 = lossless)");
  require(request.gamma.gamma >= 0 && request.gamma.gamma <= 64, ErrorKind::invalid_argument,
          "gamma: must be in [0, 64]");
  require(request.drafter.empty() ||
              std::any_of(drafters_.begin(), drafters_.end(),
                          [&](const DrafterSlot& d) { return d.name == request.drafter; }),
          ErrorKind::invalid_argument, [&] {
            std::string known;
            for (const DrafterSlot& d : drafters_) known += (known.empty() ? "" : ", ") + d.name;
            return "speculation.drafter: unknown drafter '" + request.drafter + "' (this server has: " +
                   known + ")";
          });
}

SessionKey SpeculativeEngine::add(SpeculationRequest request) {
  check(request);
  auto session = std::make_unique<Session>();
  session->key = next_key_++;
  session->prompt_length = static_cast<int>(request.prompt.size());
  session->tokens = request.prompt;
  for (size_t d = 0; d < drafters_.size(); ++d)
    if (drafters_[d].name == request.drafter) session->drafter = d;
  session->request = std::move(request);
  Session* s = session.get();
  sessions_.emplace(s->key, std::move(session));
  waiting_.push_back(s);
  return s->key;
}

void SpeculativeEngine::admit() {
  int promised = 0;  // blocks the sessions admitted here will take in this step
  while (!waiting_.empty() && static_cast<int>(running_.size()) < limits_.max_running) {
    Session& s = *waiting_.front();
    // The first chunk is at most the budget; the cache's size caps it so that
    // a session longer than the cache is still admitted when nothing runs.
    const int chunk = std::min({static_cast<int>(s.tokens.size()), limits_.step_token_budget,
                                cache_.num_blocks() * cache_.block_size()});
    const int chunk_blocks = blocks_to_admit(chunk, cache_.block_size(), 0);
    const int needed =
        blocks_to_admit(chunk, cache_.block_size(), static_cast<int>(running_.size())) + promised;
    if (!running_.empty() && cache_.free_blocks() < needed) break;  // FIFO: nobody overtakes
    promised += chunk_blocks;
    waiting_.pop_front();
    s.state = SessionState::running;
    s.seq = cache_.create_sequence();
    s.verified_since_admission = false;
    running_.push_back(&s);
    ++admissions_;
  }
}

void SpeculativeEngine::release_kv(Session& s) {
  if (s.seq != 0) release_sequence(s.seq);
  s.seq = 0;
  s.ready.reset();  // drafted from KV that is gone
  drafters_[s.drafter].drafter->release(s.key);
}

void SpeculativeEngine::preempt(Session& s) {
  release_kv(s);
  running_.erase(std::find(running_.begin(), running_.end(), &s));
  s.state = SessionState::waiting;
  s.verified_since_admission = false;
  waiting_.push_front(&s);
  ++s.result.stats.preemptions;
  ++preemptions_;
  ++last_step_.preempted;
}

void SpeculativeEngine::finish(Session& s, FinishReason reason) {
  s.result.finish = reason;
  if (s.state == SessionState::running) {
    release_kv(s);
    running_.erase(std::find(running_.begin(), running_.end(), &s));
  } else if (s.state == SessionState::waiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &s));
  }
  s.state = SessionState::finished;
}

void SpeculativeEngine::release_sequence(SequenceId seq) {
  cache_.release(seq);
  released_.push_back(seq);  // the executor's cache frees it with the next pass
}

void SpeculativeEngine::truncate_sequence(SequenceId seq, int length) {
  if (length >= cache_.length(seq)) return;
  cache_.truncate(seq, length);
  truncated_.push_back(seq);  // the executor's cache too, before the next pass reserves
  truncated_lengths_.push_back(length);
}

void SpeculativeEngine::run_target_step(TargetStep& step, std::span<const DeviceRows> local_q,
                                        TargetResult& result) {
  step.step = ++target_steps_;
  step.released = std::move(released_);
  released_.clear();
  step.truncated = std::move(truncated_);
  truncated_.clear();
  step.truncated_lengths = std::move(truncated_lengths_);
  truncated_lengths_.clear();
  target_->run(step, local_q, result);
}

void SpeculativeEngine::run_to_completion() {
  while (!running_.empty() || !waiting_.empty()) step();
}

SpeculativeEngine::Session& SpeculativeEngine::get(SessionKey session) const {
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

SpeculationResult SpeculativeEngine::take(SessionKey session) {
  Session& s = get(session);
  if (s.state != SessionState::finished) finish(s, FinishReason::cancelled);  // frees its KV now
  SpeculationResult result = std::move(s.result);
  sessions_.erase(session);
  return result;
}

double SpeculativeEngine::cost_ratio(const std::string& drafter) const {
  for (const DrafterSlot& d : drafters_)
    if (d.name == drafter) return d.cost_ratio;
  throw Error(ErrorKind::invalid_argument, "unknown drafter '" + drafter + "'");
}

std::vector<std::string> SpeculativeEngine::drafter_names() const {
  std::vector<std::string> names;
  for (const DrafterSlot& d : drafters_) names.push_back(d.name);
  return names;
}

}  // namespace tandem
