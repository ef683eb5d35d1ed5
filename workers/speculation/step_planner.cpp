#include "workers/speculation/step_planner.h"

#include <algorithm>

#include "workers/speculation/step_scheduling.h"

namespace tandem {

StepPlanner::~StepPlanner() {
  for (EngineSession* s : running_) release_kv(*s, false);
}

int StepPlanner::reusable_tokens(const EngineSession& s) const {
  int cap = static_cast<int>(s.tokens.size()) - 1;  // the last token is fed for its logits
  // Positions whose rows must score prompt tokens are fed, not reused.
  if (s.request.prompt_logprobs)
    cap = std::min(cap, static_cast<int>(s.result.prompt_logprobs.size()));
  return std::max(cap, 0);
}

bool StepPlanner::prefix_in_flight(const EngineSession& s, int cached) const {
  const int block_size = kv_.cache().block_size();
  const int cap = reusable_tokens(s);
  for (const EngineSession* r : running_) {
    if (r->verified_since_admission || r->request.cache_salt != s.request.cache_salt) continue;
    // What r's prefill will publish that s could reuse: their common prefix.
    const int limit = std::min(cap, static_cast<int>(r->tokens.size()) - 1);
    int common = 0;
    while (common < limit && r->tokens[static_cast<size_t>(common)] ==
                                 s.tokens[static_cast<size_t>(common)])
      ++common;
    if (common / block_size > cached / block_size) return true;
  }
  return false;
}

void StepPlanner::admit() {
  PagedKvCache& cache = kv_.cache();
  const bool caching = cache.prefix_caching();
  int promised = 0;  // blocks the sessions admitted here will take in this step
  while (!waiting_.empty() && static_cast<int>(running_.size()) < options_.max_running) {
    EngineSession& s = *waiting_.front();
    const uint64_t salt = s.request.cache_salt;
    const PagedKvCache::PrefixMatch match =
        caching ? cache.match_prefix(s.tokens, salt, reusable_tokens(s))
                : PagedKvCache::PrefixMatch{};
    // A prefix another session is prefilling right now is reused once it is
    // published, rather than computed twice (n > 1 choices of one prompt, a
    // system prompt shared by requests that arrive together).
    if (caching && prefix_in_flight(s, match.tokens)) break;  // FIFO: nobody overtakes
    // The first chunk is at most the budget; the cache's size caps it so that
    // a session longer than the cache is still admitted when nothing runs.
    const int chunk = std::min({static_cast<int>(s.tokens.size()) - match.tokens,
                                options_.step_token_budget,
                                cache.num_blocks() * cache.block_size() - match.tokens});
    const int chunk_blocks = blocks_to_admit(chunk, cache.block_size(), 0);
    // Cached blocks nobody holds leave the pool when attached.
    const int needed = blocks_to_admit(chunk, cache.block_size(),
                                       static_cast<int>(running_.size())) +
                       promised + match.evictable;
    if (!running_.empty() && cache.free_blocks() < needed) break;  // FIFO: nobody overtakes
    promised += chunk_blocks;
    waiting_.pop_front();
    s.state = SessionState::running;
    s.seq = cache.create_sequence();
    const int attached = caching ? cache.attach_prefix(s.seq, s.tokens, salt, reusable_tokens(s))
                                 : 0;
    if (s.result.stats.preemptions == 0) s.result.stats.cached_tokens = attached;
    s.verified_since_admission = false;
    running_.push_back(&s);
  }
}

void StepPlanner::publish(const EngineSession& s) {
  PagedKvCache& cache = kv_.cache();
  if (!cache.prefix_caching() || s.seq == 0 || s.tokens.empty()) return;
  // Positions up to the last committed token hold the committed tokens'
  // K/V; the last one is fed next (and a finished session's cache may hold
  // a rejected draft there).
  cache.publish(s.seq, std::span(s.tokens).first(s.tokens.size() - 1), s.request.cache_salt);
}

void StepPlanner::plan(StepPlan& plan, const ChooseGamma& choose) const {
  std::vector<ChunkRequest> requests;
  for (EngineSession* s : running_) {
    if (std::find(plan.apart.begin(), plan.apart.end(), s) != plan.apart.end()) continue;
    StepPlan::Entry entry;
    entry.session = s;
    choose(*s, entry);
    plan.entries.push_back(std::move(entry));
    requests.push_back({static_cast<int>(s->tokens.size()) - kv_.cache().length(s->seq),
                        plan.entries.back().gamma});
  }
  const std::vector<ChunkPlan> chunks = plan_chunks(requests, options_.step_token_budget);
  for (size_t i = 0; i < chunks.size(); ++i) plan.entries[i].chunk = chunks[i];
}

void StepPlanner::reserve(StepPlan& plan, StepReport& report) {
  PagedKvCache& cache = kv_.cache();
  auto drop = [&plan](EngineSession* s) {
    for (auto& e : plan.entries)
      if (e.session == s) e.dropped = true;
  };
  for (StepPlan::Entry& e : plan.entries) {
    if (e.dropped) continue;
    EngineSession& s = *e.session;
    auto needed = [&] {
      return cache.length(s.seq) + e.chunk.fed + (e.chunk.verifies ? e.gamma : 0);
    };
    while (!cache.reserve(s.seq, needed())) {
      EngineSession& youngest = *running_.back();
      if (&youngest != &s) {
        drop(&youngest);
        preempt(youngest, report);
        continue;
      }
      if (running_.size() > 1) {  // it is the youngest itself: it yields
        e.dropped = true;
        preempt(s, report);
        break;
      }
      // Alone, with every other block free. Without its drafts it may still
      // fit (a shorter block, same distribution); if not, its context can
      // never grow on this cache, and ending it with what it has is the
      // only outcome that neither loops nor loses its output: max_tokens
      // was, in effect, what the cache can hold.
      if (e.chunk.verifies && e.gamma > 0) {
        e.gamma = 0;
        e.from_ready = false;
        s.ready.reset();
        continue;
      }
      e.dropped = true;
      finish(s, FinishReason::length);
      break;
    }
  }
}

void StepPlanner::release_kv(EngineSession& s, bool keep_prefix) {
  // A session that failed may have computed K/V from non-finite numbers:
  // nothing of it is kept for others.
  if (keep_prefix) publish(s);
  if (s.seq != 0) kv_.release(s.seq);
  s.seq = 0;
  s.ready.reset();  // drafted from KV that is gone
  s.draft->release(s.key);
}

void StepPlanner::preempt(EngineSession& s, StepReport& report) {
  release_kv(s, true);
  running_.erase(std::find(running_.begin(), running_.end(), &s));
  s.state = SessionState::waiting;
  s.verified_since_admission = false;
  waiting_.push_front(&s);
  ++s.result.stats.preemptions;
  ++preemptions_;
  ++report.preempted;
}

void StepPlanner::finish(EngineSession& s, FinishReason reason) {
  s.result.finish = reason;
  if (s.state == SessionState::running) {
    release_kv(s, reason != FinishReason::failed);
    running_.erase(std::find(running_.begin(), running_.end(), &s));
  } else if (s.state == SessionState::waiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &s));
  }
  s.state = SessionState::finished;
}

}  // namespace tandem
