#include "workers/plain_decoder.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "workers/token_sampler.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Releases the sequence however decoding ends (including by exception).
struct SequenceGuard {
  PagedKvCache& cache;
  SequenceId seq;
  ~SequenceGuard() { cache.release(seq); }
};

}  // namespace

DecodeStats decode_plain(LlamaModel& model, PagedKvCache& cache, const DecodeRequest& request,
                         const std::function<bool(int32_t)>& on_token) {
  require(!request.prompt.empty(), ErrorKind::invalid_argument,
          "prompt is empty: give at least one token (or let the tokenizer add BOS)");
  require(request.max_new_tokens >= 0, ErrorKind::invalid_argument, "max_new_tokens < 0");
  const int total = static_cast<int>(request.prompt.size()) + request.max_new_tokens;
  require(total <= model.config().max_position_embeddings, ErrorKind::invalid_argument,
          "prompt + max_new_tokens = " + std::to_string(total) +
              " exceeds the model's context of " +
              std::to_string(model.config().max_position_embeddings) + " tokens");

  SequenceGuard guard{cache, cache.create_sequence()};
  require(cache.reserve(guard.seq, total), ErrorKind::out_of_resources,
          "KV cache too small for " + std::to_string(total) +
              " tokens: raise the number of KV blocks");

  DecodeStats stats;
  stats.prompt_tokens = static_cast<int>(request.prompt.size());
  if (request.max_new_tokens == 0) return stats;
  TokenSampler sampler(model.backend(), model.config().vocab_size);

  const auto start = Clock::now();
  SequenceStep step{guard.seq, request.prompt, 1};
  const float* logits = model.forward(std::span(&step, 1), cache);
  int64_t position = stats.prompt_tokens;
  int32_t token = sampler.pick(logits, request.sampling, position);
  stats.prefill_seconds = seconds_since(start);

  const auto decode_start = Clock::now();
  for (;;) {
    ++stats.new_tokens;
    const bool stop = std::find(request.stop_ids.begin(), request.stop_ids.end(), token) !=
                      request.stop_ids.end();
    if (!on_token(token) || stop || stats.new_tokens == request.max_new_tokens) break;
    step.tokens = std::span(&token, 1);
    logits = model.forward(std::span(&step, 1), cache);
    token = sampler.pick(logits, request.sampling, ++position);
  }
  stats.decode_seconds = seconds_since(decode_start);
  return stats;
}

}  // namespace tandem
